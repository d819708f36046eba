"""Operator storm (S20, S23, S26-S33): several operator processes adopt, transfer, retire,
restore (one schedule or a whole owner), pause, resume and run reconciliation passes as
fast as they can, while a leader fires every second and an authoritative owner publishes
its manifest. No deadlock, no audit entry lost, no retired schedule fires, nothing is
deleted, the audit trail replays to the final state, no fire is doubled."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from .app import schedule_names
from .harness import (
    Summary,
    check_fires,
    connect,
    db_now,
    deadlocks,
    fleet,
    settle,
)

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

SCHEDULES = 40
DECLARED_BY_ALPHA = 10  # the authoritative owner's manifest: the first ten names
OPERATORS = 3
STORM_S = 10.0
GRACE_S = 1.0
MESSAGE = "fired while retired"

# Named to run after awa's own BEFORE triggers (alphabetical), so it sees what the fence let
# through: a retired row version whose fire boundary moves while it stays retired is a fire.
GUARD_SQL = f"""
CREATE SCHEMA IF NOT EXISTS rel;
CREATE FUNCTION rel.no_fire_while_retired() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.retired_at IS NOT NULL AND NEW.retired_at IS NOT NULL
       AND NEW.last_enqueued_at IS DISTINCT FROM OLD.last_enqueued_at THEN
        RAISE EXCEPTION 'rel: % {MESSAGE} (retired at %)', OLD.name, OLD.retired_at;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER zz_rel_no_fire_while_retired BEFORE UPDATE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION rel.no_fire_while_retired();
CREATE FUNCTION rel.no_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rel: % deleted during the storm', OLD.name;
END
$$;
CREATE TRIGGER zz_rel_no_delete BEFORE DELETE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION rel.no_delete();
"""


def replay_audit(conn: psycopg.Connection[Any], names: list[str]) -> dict[str, dict[str, Any]]:
    """Each schedule's owner and retired-ness as its audit trail tells it (last word wins)."""
    state: dict[str, dict[str, Any]] = {n: {"owner": None, "retired": False} for n in names}
    for row in conn.execute("SELECT target, after FROM awa.audit_log ORDER BY id").fetchall():
        after = row["after"]
        if row["target"] not in state or not isinstance(after, dict):
            continue
        if "owner" in after:
            state[row["target"]]["owner"] = after["owner"]
        if "retired_at" in after:
            state[row["target"]]["retired"] = after["retired_at"] is not None
    return state


def _guard_works(conn: psycopg.Connection[Any]) -> None:
    """The guard refuses a fire of a retired row (awa's own fence set aside), so a quiet
    storm means something. Everything here is rolled back."""
    with conn.transaction():
        conn.execute("ALTER TABLE awa.cron_jobs DISABLE TRIGGER cron_jobs_fence")
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, retired_at, retired_by) "
                     "VALUES ('rel-probe', '* * * * *', 'k', now(), 'probe')")
        with pytest.raises(psycopg.errors.RaiseException, match=MESSAGE), conn.transaction():
            conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = now() WHERE name = 'rel-probe'")
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('rel-probe-2', '* * * * *', 'k')")
        with pytest.raises(psycopg.errors.RaiseException, match="deleted during the storm"), conn.transaction():
            conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'rel-probe-2'")
        raise psycopg.Rollback()


def test_operator_storm(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    started = time.monotonic()
    names = schedule_names(SCHEDULES)
    conn = connect(dsn)
    conn.execute(GUARD_SQL)  # type: ignore[arg-type]
    _guard_works(conn)
    deadlocks_before = deadlocks(conn)
    storm_s = STORM_S * scale
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()  # plain, additive: declares all 40 and leads
        settle(conn, f.names)
        alpha = f.spawn(command=["-m", "reliability.runner", dsn, "alpha", str(GRACE_S)],
                        env={"AWA_REL_COUNT": str(DECLARED_BY_ALPHA)})
        wait_for(lambda: conn.execute("SELECT 1 FROM awa.runtime_instances WHERE owner = 'alpha'").fetchone(), 30,
                 what="the authoritative owner publishing")
        operators = []
        for i in range(OPERATORS):
            out = log_dir / f"storm-{i}.json"
            operators.append((f"storm-{i}", out, f.spawn(command=[
                "-m", "reliability.storm", dsn, f"storm-{i}", str(storm_s), str(i), str(out), ",".join(names)])))
        for _, _, proc in operators:
            proc.proc.wait(storm_s + 120)
        assert alpha.alive(), alpha.tail()
        end = db_now(conn)
        statuses = {p.pid: p.stop() for p in (alpha, *f.live)}
        problems = f.problems()
        logged = [line for p in f.procs for line in p.log().splitlines()
                  if MESSAGE in line or "deadlock" in line.lower()]
    results = {label: json.loads(out.read_text()) for label, out, _ in operators}
    failures = [f"{label}: {x}" for label, r in results.items() for x in r["failures"]]
    done = sum(sum(r["ok"].values()) for r in results.values())
    refused = sum(sum(r["refused"].values()) for r in results.values())
    check = check_fires(conn, names, "* * * * * *", end)
    summary.runs = done
    summary.count(check, losses=False)  # restore skips the retired period by design (S28): gaps are expected
    summary.seconds = time.monotonic() - started
    summary.notes = (f"{OPERATORS} operator processes: {done} actions done, {refused} refused by state; "
                     f"deadlocks {deadlocks(conn) - deadlocks_before}")
    summary.extra = {label: {"ok": r["ok"], "refused": r["refused"]} for label, r in results.items()}
    assert not failures, failures[:10]
    assert not logged, logged[:10]
    assert deadlocks(conn) == deadlocks_before, "Postgres detected a deadlock"
    for label, r in results.items():
        row = conn.execute("SELECT count(*) AS n FROM awa.audit_log WHERE operator = %s", (label,)).fetchone()
        assert row is not None and row["n"] == r["audit_entries"], f"{label}: audit rows != actions"
    current = {r["name"]: r for r in conn.execute("SELECT name, owner, retired_at FROM awa.cron_jobs").fetchall()}
    assert sorted(current) == sorted(names), "a schedule was deleted or invented"
    replayed = replay_audit(conn, names)
    for name in names:
        row = current[name]
        assert replayed[name] == {"owner": row["owner"], "retired": row["retired_at"] is not None}, \
            f"{name}: the audit trail does not replay to the row"
    assert not check.duplicates and not check.out_of_order, check.describe()
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}\n{f.logs()}"
    assert not problems, "\n".join(problems)
