"""Primary failover onto a promoted hot standby (S58): runtimes on a multi-host DSN
(`target_session_attrs=read-write`) lose their primary to an immediate stop, the standby
is promoted, and they reconnect to it and fire there. Nothing is doubled, and what each
missed-fire policy does with the outage is exact, counted on the new primary against
instants Postgres computes (generate_series), never the engine's cron code.

Replication is asynchronous (the default, and the harder case): a fire the old primary
committed just before the crash may never reach the standby; the new primary then has no
trace of it, and the policy fires that instant again as a missed one (catch_up replays
it, coalesce folds it into the latest instant). The oracle sees one job per instant
either way, since it counts on the new primary only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from awa_tui.engine.migrations import migrate

from .harness import (
    Fleet,
    Summary,
    caught_up,
    check_fires,
    current_leader,
    db_now,
    due_instants,
    first_fire_after,
    fleet,
    install_job_origin,
    pause,
)
from .replication import ReplicaPair

pytestmark = pytest.mark.slow  # two servers and real runtime processes for tens of seconds

SCHEDULES = 10
EXPR = "* * * * * *"
OUTAGE_S = 3.0  # no primary at all: the instants every schedule misses
TAIL_S = 2  # seconds of fires the old primary commits after replication is cut
# Promotion done -> the first fire there: a loop's longest backoff (it failed all through
# the outage), the election retry and one evaluator tick.
RECOVERY_BOUND_S = 5.0 + 2.0


@pytest.fixture
def pair() -> Iterator[ReplicaPair]:
    replicas = ReplicaPair(dbname="awa_failover").start()
    try:
        yield replicas
    finally:
        replicas.close()


def _fires(conn: Any, names: list[str]) -> dict[str, list[tuple[datetime, datetime]]]:
    """Per schedule, (instant, inserted at) of every fired job, in instant order."""
    rows = conn.execute(
        "SELECT j.metadata ->> 'cron_name' AS name, (j.metadata ->> 'cron_fire_time')::timestamptz AS fire, o.at "
        "FROM awa.jobs j JOIN rel.job_origin o ON o.job_id = j.id "
        "WHERE j.metadata ->> 'cron_name' = ANY(%s) ORDER BY 1, 2", (names,)).fetchall()
    out: dict[str, list[tuple[datetime, datetime]]] = {n: [] for n in names}
    for r in rows:
        out[r["name"]].append((r["fire"], r["at"]))
    return out


def _all_firing(conn: Any, names: list[str]) -> None:
    """Every schedule exists and fired in the last two seconds (harness.settle alone would
    pass before a runtime has synced its rows at all)."""
    wait_for(lambda: current_leader(conn), 60, what="a leader")
    wait_for(lambda: conn.execute(
        "SELECT count(*) AS n FROM awa.cron_jobs WHERE name = ANY(%s) "
        "AND last_enqueued_at >= clock_timestamp() - interval '2 seconds'", (names,)).fetchone()["n"] == len(names),
        60, what="every schedule firing")


def _pairs_counted(conn: Any, names: list[str], *, before: datetime | None = None,
                   after: datetime | None = None) -> dict[tuple[str, datetime], int]:
    """(schedule, instant) -> how many jobs, of the jobs inserted in (after, before)."""
    rows = conn.execute(
        "SELECT j.metadata ->> 'cron_name' AS name, (j.metadata ->> 'cron_fire_time')::timestamptz AS fire, "
        "count(*) AS n FROM awa.jobs j JOIN rel.job_origin o ON o.job_id = j.id "
        "WHERE j.metadata ->> 'cron_name' = ANY(%s) AND (%s::timestamptz IS NULL OR o.at < %s) "
        "AND (%s::timestamptz IS NULL OR o.at >= %s) GROUP BY 1, 2", (names, before, before, after, after)).fetchall()
    return {(r["name"], r["fire"]): r["n"] for r in rows}


def _pairs(conn: Any, names: list[str], *, before: datetime | None = None) -> set[tuple[str, datetime]]:
    return set(_pairs_counted(conn, names, before=before))


def _check_coalesce(conn: Any, names: list[str], promoting: datetime, end: datetime) -> list[str]:
    """coalesce across the outage: every instant once up to the last fire the new primary
    has from the old one, none in the gap, then the latest instant due at the first pass on
    the new primary (the second in which that job was inserted), then every instant once up
    to `end`."""
    problems = []
    for name, every in _fires(conn, names).items():
        fires = [(f, at) for f, at in every if f <= end]  # the runtimes fire on until they stop
        instants = [f for f, _ in fires]
        if len(set(instants)) != len(instants):
            problems.append(f"{name}: doubled")
            continue
        # Nothing could write between the crash and the promotion: before it, the old primary.
        before = [f for f, at in fires if at < promoting]
        after = [(f, at) for f, at in fires if at >= promoting]
        if not before or not after:
            problems.append(f"{name}: {len(before)} fires before the crash, {len(after)} after")
            continue
        first_new, inserted = after[0]
        if first_new != inserted.replace(microsecond=0):
            problems.append(f"{name}: first fire after the promotion is {first_new}, inserted at {inserted}")
        if (first_new - before[-1]).total_seconds() <= 1:
            problems.append(f"{name}: no gap between {before[-1]} and {first_new}: the outage was replayed")
        spans = [(name, before[0], before[-1]), (name, first_new, end)]
        expected = [at for _, at in due_instants(conn, EXPR, spans)]
        if instants != expected:
            missing = sorted(set(expected) - set(instants))
            extra = sorted(set(instants) - set(expected))
            problems.append(f"{name}: missing {missing[:5]}, unexpected {extra[:5]}")
    return problems


def test_failover_to_a_promoted_standby(pair: ReplicaPair, log_dir: Path, summary: Summary) -> None:
    started = time.monotonic()
    migrate(pair.dsn(pair.primary))
    primary = pair.connect(pair.primary)
    install_job_origin(primary)
    dsn = pair.failover_dsn()
    (log_dir / "catch_up").mkdir()
    (log_dir / "coalesce").mkdir()
    with fleet(dsn, log_dir / "catch_up", count=SCHEDULES, expr=EXPR, policy="catch_up", prefix="cu") as cu, \
            fleet(dsn, log_dir / "coalesce", count=SCHEDULES, expr=EXPR, policy="coalesce", prefix="co") as co:
        fleets: list[Fleet] = [cu, co]
        for f in fleets:
            f.spawn()
        for f in fleets:
            _all_firing(primary, f.names)
        wait_for(lambda: primary.execute(
            "SELECT count(*) AS n FROM awa.runtime_instances WHERE stopped_at IS NULL").fetchone()["n"] == 2,
            60, what="both runtimes running")
        pair.wait_replayed()
        # The tail an asynchronous standby can lose, made certain: replication is cut, the
        # primary fires on for TAIL_S, then crashes. Those fires exist only on the old primary.
        pair.detach_standby()
        detached = db_now(primary)
        wait_for(lambda: caught_up(primary, cu.names + co.names, detached + timedelta(seconds=TAIL_S)), 30,
                 what="fires the standby will never see")
        old_fires = _pairs(primary, cu.names)
        primary.close()
        pair.stop_primary()
        assert not pair.reachable(pair.primary), "the primary still answers after the immediate stop"
        pause(OUTAGE_S)  # the outage: nobody can fire
        new = pair.connect(pair.standby)
        promoting = db_now(new)  # the same host's clock as the primary's: instants compare
        pair.promote()
        promoted = db_now(new)
        # From the promotion request: the runtimes may fire there before `pg_ctl promote -w`
        # has even seen the promotion finish (it polls).
        first: datetime = wait_for(lambda: first_fire_after(new, promoting), 30, what="a fire on the new primary")
        recovery_s = (first - promoting).total_seconds()
        assert current_leader(new) is not None
        wait_for(lambda: caught_up(new, cu.names, promoted + timedelta(seconds=3)), 60, what="catch_up replayed")
        _all_firing(new, co.names)
        end = db_now(new)
        wait_for(lambda: caught_up(new, cu.names + co.names, end), 60, what="every schedule fired up to the end")
        assert all(p.alive() for f in fleets for p in f.procs), "\n".join(f.logs() for f in fleets)
        statuses = {pid: code for f in fleets for pid, code in f.stop_all().items()}
        problems = [line for f in fleets for line in f.problems()]
    caught = check_fires(new, cu.names, EXPR, end)
    replicated = _pairs(new, cu.names, before=promoting)
    lost = old_fires - replicated
    refired = {k: v for k, v in _pairs_counted(new, cu.names, after=promoting).items() if k in lost}
    coalesced = _check_coalesce(new, co.names, promoting, end)
    summary.runs = 1
    summary.count(caught)
    summary.max_failover_s = recovery_s
    summary.seconds = time.monotonic() - started
    summary.notes = (f"max failover = promotion asked -> first fire on the new primary ({recovery_s:.2f}s; "
                     f"pg_ctl promote -w took {(promoted - promoting).total_seconds():.2f}s); "
                     f"async replication, {OUTAGE_S:g}s without a primary; catch_up replayed every instant, "
                     f"coalesce fired the latest once; the {len(lost)} catch_up fires lost with the "
                     f"unreplicated tail ({TAIL_S:g}s) were fired again on the new primary")
    summary.extra = {"recovery_s": recovery_s, "promote_s": (promoted - promoting).total_seconds(),
                     "lost_tail_fires": len(lost),
                     "coalesce_fires": sum(len(v) for v in _fires(new, co.names).values())}
    assert lost, "the cut replication lost no fire: the tail was not exercised"
    assert refired == dict.fromkeys(lost, 1), f"lost fires not re-fired once each: {sorted(lost - set(refired))[:5]}"
    assert caught.ok, caught.describe()
    assert coalesced == [], coalesced
    # Negative controls: each policy's oracle rejects the other's outcome, so neither
    # passes by accepting anything (and the outage really cost coalesce its instants).
    assert check_fires(new, co.names, EXPR, end).losses, "coalesce lost nothing: the outage did not happen"
    assert {p.split(":")[0] for p in _check_coalesce(new, cu.names, promoting, end)} == set(cu.names)
    assert recovery_s <= RECOVERY_BOUND_S, f"slow recovery: {recovery_s:.2f}s"
    assert set(statuses.values()) == {0}, f"unclean stop: {statuses}"
    assert not problems, "\n".join(problems)
