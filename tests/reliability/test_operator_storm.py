"""Operator storm (S20, S23, S26-S33): several operator processes adopt, transfer, retire,
restore (one schedule or a whole owner), pause, resume and run reconciliation passes as
fast as they can, while a leader fires every second and an authoritative owner publishes
its manifest. No deadlock, no audit entry lost, no retired schedule fires and nothing is
deleted (the guards' table), the audit trail replays to the final state, no fire is doubled,
and no fire is lost while a schedule was not retired (judged from the audit's intervals)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.core.errors import Conflict

from .app import schedule_names
from .harness import (
    Summary,
    check_fires,
    connect,
    db_now,
    deadlocks,
    due_instants,
    fleet,
    guard_violations,
    install_guards,
    last_audit_id,
    pause,
    settle,
)

# Real processes for tens of seconds: `-m "not slow"` leaves them out of a quick local run.
pytestmark = pytest.mark.slow

SCHEDULES = 40
DECLARED_BY_ALPHA = 10  # the authoritative owner's manifest: the first ten names
OPERATORS = 3
STORM_S = 10.0
GRACE_S = 1.0
# The least each action must have been done across the operators (seen on a loaded 2-core
# machine: several times these), so a storm that mostly bounced off refusals fails.
MIN_DONE = {"adopt": 15, "transfer": 30, "retire": 40, "restore": 30, "pause": 8, "resume": 5,
            "retire_owner": 3, "restore_owner": 3, "reconcile": 25}
MIN_INSTANTS_CHECKED = 100
# How long a schedule must stay active (not retired, not paused) after an instant for the
# leader to have surely fired it: a pass every second, rows an operator holds skipped once.
SETTLE_S = timedelta(seconds=3)
QUIET_S = 8.0  # after the storm the leader fires on: the final states' instants are checked too

State = tuple[bool, bool]  # (retired, paused)


def lifecycle_events(conn: psycopg.Connection[Any], names: list[str], audit_from: int,
                     initial: dict[str, State]) -> dict[str, list[tuple[datetime, bool, bool]]]:
    """Each schedule's (at, retired, paused) after every audited action, from the audit."""
    events: dict[str, list[tuple[datetime, bool, bool]]] = {n: [] for n in names}
    state = dict(initial)
    for row in conn.execute("SELECT target, at, after FROM awa.audit_log WHERE id > %s AND target = ANY(%s) "
                            "ORDER BY id", (audit_from, names)).fetchall():
        after = row["after"] if isinstance(row["after"], dict) else {}
        was_retired, paused = state[row["target"]]
        retired = after["retired_at"] is not None if "retired_at" in after else was_retired
        paused = after["paused_at"] is not None if "paused_at" in after else paused
        state[row["target"]] = (retired, paused)
        at = row["at"]
        if was_retired and not retired and after.get("last_enqueued_at"):
            # S28: a restore's boundary is the DB time read after the protocol lock, which it
            # records as last_enqueued_at; the audit's `at` is its transaction's start, and
            # waiting for the lock can carry the boundary past an instant the row then skips.
            at = max(at, datetime.fromisoformat(after["last_enqueued_at"]))
        events[row["target"]].append((at, retired, paused))
    return events


def must_have_fired(t: datetime, initial: State, events: list[tuple[datetime, bool, bool]],
                    end: datetime) -> bool:
    """Whether instant t was due and surely fired: not retired at t, and active (unpaused,
    catch_up replays a pause) for SETTLE_S before any retirement skipped it (S28)."""
    earlier = [(r, p) for at, r, p in events if at <= t]
    retired, paused = earlier[-1] if earlier else initial
    if retired:
        return False
    later = [e for e in events if e[0] > t]
    calm = None if paused else t
    for at, now_retired, now_paused in later:
        if calm is not None and at >= calm + SETTLE_S:
            return True
        if now_retired:
            return False
        calm = None if now_paused else (calm or at)
    return calm is not None and calm + SETTLE_S <= end


def losses_by_audit(conn: psycopg.Connection[Any], names: list[str], audit_from: int, initial: dict[str, State],
                    start: datetime, end: datetime) -> tuple[int, list[str]]:
    """Every instant of the storm at which a schedule was not retired, and stayed active
    long enough after it, must have fired: (instants checked, those that did not)."""
    events = lifecycle_events(conn, names, audit_from, initial)
    fired = {(r["name"], r["fire"]) for r in conn.execute(
        "SELECT metadata ->> 'cron_name' AS name, (metadata ->> 'cron_fire_time')::timestamptz AS fire "
        "FROM awa.jobs WHERE metadata ->> 'cron_name' = ANY(%s) AND NOT metadata ? 'triggered_manually'",
        (names,)).fetchall()}
    due = [(n, t) for n, t in due_instants(conn, "* * * * * *", [(n, start, end) for n in names])
           if must_have_fired(t, initial[n], events[n], end)]
    return len(due), [f"{n}@{t.isoformat()}" for n, t in due if (n, t) not in fired]


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


def bring_back(conn: psycopg.Connection[Any], dsn: str, names: list[str]) -> int:
    """After the storm an operator restores and resumes everything, so the quiet period
    checks every schedule's fires, not only the few the storm happened to leave active.
    (alpha's reconciliation may retire its undeclared ones again: audited, and allowed for.)"""
    done = 0
    with Client(dsn, operator="rel-aftermath") as client:
        for row in conn.execute("SELECT name, retired_at, paused_at FROM awa.cron_jobs WHERE name = ANY(%s) "
                                "ORDER BY name", (names,)).fetchall():
            for wanted, act in ((row["retired_at"] is not None, client.actions.restore),
                                (row["paused_at"] is not None, client.actions.resume)):
                if not wanted:
                    continue
                try:
                    act(row["name"])
                    done += 1
                except Conflict:  # alpha's reconciliation got there first: the state said no
                    continue
    return done


def test_operator_storm(dsn: str, log_dir: Path, scale: int, summary: Summary) -> None:
    started = time.monotonic()
    names = schedule_names(SCHEDULES)
    conn = connect(dsn)
    install_guards(conn)
    deadlocks_before = deadlocks(conn)
    storm_s = STORM_S * scale
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        f.spawn()  # plain, additive: declares all 40 and leads
        settle(conn, f.names)
        alpha = f.spawn(command=["-m", "reliability.runner", dsn, "alpha", str(GRACE_S)],
                        env={"AWA_REL_COUNT": str(DECLARED_BY_ALPHA)})
        wait_for(lambda: conn.execute("SELECT 1 FROM awa.runtime_instances WHERE owner = 'alpha'").fetchone(), 30,
                 what="the authoritative owner publishing")
        audit_from, start = last_audit_id(conn), db_now(conn)
        initial = {r["name"]: (r["retired"], r["paused"]) for r in conn.execute(
            "SELECT name, retired_at IS NOT NULL AS retired, paused_at IS NOT NULL AS paused FROM awa.cron_jobs "
            "WHERE name = ANY(%s)", (names,)).fetchall()}
        operators = []
        for i in range(OPERATORS):
            out = log_dir / f"storm-{i}.json"
            operators.append((f"storm-{i}", out, f.spawn(command=[
                "-m", "reliability.storm", dsn, f"storm-{i}", str(storm_s), str(i), str(out), ",".join(names)])))
        for _, _, proc in operators:
            proc.proc.wait(storm_s + 120)
        assert alpha.alive(), alpha.tail()
        aftermath = bring_back(conn, dsn, names)
        pause(QUIET_S)
        end = db_now(conn)
        statuses = {p.pid: p.stop() for p in (alpha, *f.live)}
        problems = f.problems()
    results = {label: json.loads(out.read_text()) for label, out, _ in operators}
    failures = [f"{label}: {x}" for label, r in results.items() for x in r["failures"]]
    done = sum(sum(r["ok"].values()) for r in results.values())
    refused = sum(sum(r["refused"].values()) for r in results.values())
    check = check_fires(conn, names, "* * * * * *", end)
    done_by_action = {a: sum(r["ok"].get(a, 0) for r in results.values()) for a in MIN_DONE}
    checked, lost = losses_by_audit(conn, names, audit_from, initial, start, end)
    violations = guard_violations(conn)
    summary.runs = done
    summary.count(check, losses=False)  # restore skips the retired period by design (S28): gaps are expected
    summary.fires_checked, summary.losses = checked, len(lost)  # losses judged from the audit's intervals
    summary.seconds = time.monotonic() - started
    summary.notes = (f"{OPERATORS} operator processes: {done} actions done, {refused} refused by state, "
                     f"{aftermath} restores/resumes after; "
                     f"deadlocks {deadlocks(conn) - deadlocks_before}")
    summary.extra = {"done": done_by_action, "violations": len(violations),
                     **{label: {"ok": r["ok"], "refused": r["refused"]} for label, r in results.items()}}
    assert not failures, failures[:10]
    assert not violations, violations[:10]
    short = {a: n for a, n in done_by_action.items() if n < MIN_DONE[a]}
    assert not short, f"too quiet a storm: {short} (at least {MIN_DONE})"
    assert checked >= MIN_INSTANTS_CHECKED, f"only {checked} instants checked against the audit"
    assert not lost, f"{len(lost)} of {checked} due fires lost: {lost[:10]}"
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
