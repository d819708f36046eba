"""Leader crash loop with overlap schedules (S45, S7, S11): kill -9 the leader again and
again while a stand-in worker finishes jobs at its own pace. For every schedule, every
due instant from its first fire on is either enqueued exactly once or recorded as
skipped_overlap (awa.fire_skips) — never both, never neither — and a `skip` schedule never
has two waiting or running jobs at once, a `buffer_one` schedule never two waiting.

"Lost" is defined against the ledger: an instant with neither a job nor a skip record.
The oracle of what was due is generate_series (harness.due_instants), not the engine."""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from . import app as rel_app
from . import harness

pytestmark = pytest.mark.slow

RUNTIMES = 3
SCHEDULES = 40  # per policy
KILLS = 8

# Test-only: after every job insert, record a schedule that then has more jobs going than
# its policy allows (the fire statement decides under the schedule's row lock, so the
# count seen here, own insert included, is exact for inserts).
OVERLAP_GUARD_SQL = """
CREATE SCHEMA IF NOT EXISTS rel;
CREATE TABLE IF NOT EXISTS rel.overlap_violation (id bigserial PRIMARY KEY, name text, policy text,
    active bigint, waiting bigint, at timestamptz DEFAULT clock_timestamp());
CREATE OR REPLACE FUNCTION rel.guard_overlap() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    policy text;
    n_active bigint;
    n_waiting bigint;
BEGIN
    SELECT c.overlap INTO policy FROM awa.cron_jobs c WHERE c.name = NEW.metadata ->> 'cron_name';
    IF policy IS NULL OR policy = 'allow' THEN
        RETURN NULL;
    END IF;
    SELECT count(*), count(*) FILTER (WHERE state <> 'running') INTO n_active, n_waiting
    FROM awa.jobs WHERE metadata ->> 'cron_name' = NEW.metadata ->> 'cron_name'
      AND state IN ('available', 'running', 'retryable');
    IF (policy = 'skip' AND n_active > 1) OR (policy = 'buffer_one' AND n_waiting > 1) THEN
        INSERT INTO rel.overlap_violation (name, policy, active, waiting)
        VALUES (NEW.metadata ->> 'cron_name', policy, n_active, n_waiting);
    END IF;
    RETURN NULL;
END;
$$;
DROP TRIGGER IF EXISTS zz_rel_guard_overlap ON awa.jobs;
CREATE TRIGGER zz_rel_guard_overlap AFTER INSERT ON awa.jobs
    FOR EACH ROW EXECUTE FUNCTION rel.guard_overlap();
"""

# The stand-in worker: claims a random few of the waiting jobs, then finishes some of the
# running ones, so instants land both while jobs are going and while none is.
WORK_SQL = """
WITH claimed AS (
    UPDATE awa.jobs SET state = 'running', attempt = attempt + 1, attempted_at = now()
    WHERE id IN (SELECT id FROM awa.jobs WHERE state = 'available' AND random() < 0.5
                 FOR UPDATE SKIP LOCKED)
    RETURNING id
)
UPDATE awa.jobs SET state = 'completed', finalized_at = now()
WHERE id IN (SELECT id FROM awa.jobs WHERE state = 'running' AND random() < 0.5 FOR UPDATE SKIP LOCKED)
"""


def check_overlap_fires(conn: Any, names: list[str], until: datetime) -> dict[str, list[str]]:
    """Every due instant from each schedule's first fire to `until`: one job xor one skip."""
    jobs = conn.execute(
        "SELECT metadata ->> 'cron_name' AS name, (metadata ->> 'cron_fire_time')::timestamptz AS at, count(*) AS n "
        "FROM awa.jobs WHERE metadata ->> 'cron_name' = ANY(%s) GROUP BY 1, 2", (names,)).fetchall()
    skips = conn.execute("SELECT cron_name AS name, fire_time AS at FROM awa.fire_skips WHERE cron_name = ANY(%s)",
                         (names,)).fetchall()
    fired = {(r["name"], r["at"]): r["n"] for r in jobs}
    skipped = {(r["name"], r["at"]) for r in skips}
    firsts: dict[str, datetime] = {}
    for name, at in list(fired) + list(skipped):
        firsts[name] = min(at, firsts.get(name, at))
    problems: dict[str, list[str]] = {"never fired": [n for n in names if n not in firsts], "duplicates": [],
                                      "fired and skipped": [], "lost": []}
    problems["duplicates"] = [f"{n}@{a.isoformat()} x{k}" for (n, a), k in fired.items() if k > 1]
    problems["fired and skipped"] = [f"{n}@{a.isoformat()}" for n, a in fired.keys() & skipped]
    spans = [(n, first, until) for n, first in firsts.items()]
    problems["lost"] = [f"{n}@{a.isoformat()}" for n, a in harness.due_instants(conn, "* * * * * *", spans)
                        if (n, a) not in fired and (n, a) not in skipped]
    return {k: v for k, v in problems.items() if v}


def test_overlap_crash_loop(dsn: str, log_dir: Path, scale: int, summary: harness.Summary) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    kills = KILLS * scale
    summary.notes = (f"{RUNTIMES} runtimes, {SCHEDULES} skip + {SCHEDULES} buffer_one catch_up schedules "
                     f"every second, a stand-in worker, seed {seed}")
    started = time.monotonic()
    conn = harness.connect(dsn)
    conn.execute(OVERLAP_GUARD_SQL)  # type: ignore[arg-type]  # literal test SQL
    stop = threading.Event()
    worker_conn = harness.connect(dsn)

    pace = random.Random(seed + 1)  # the worker's own generator (another thread)

    def work() -> None:
        while not stop.wait(pace.uniform(0.2, 1.5)):
            worker_conn.execute(WORK_SQL)

    worker = threading.Thread(target=work, name="stand-in-worker")
    skip_env = {rel_app.OVERLAP_ENV: "skip"}
    buffer_env = {rel_app.OVERLAP_ENV: "buffer_one", rel_app.PREFIX_ENV: "buf"}
    with harness.fleet(dsn, log_dir, count=SCHEDULES) as f:
        buffer_names = rel_app.schedule_names(SCHEDULES, "buf")
        names = f.names + buffer_names
        # Processes alternate between two declarations (rel-* skip, buf-* buffer_one); each
        # syncs its own set, and whichever leads fires both.
        for i in range(RUNTIMES):
            f.spawn(env=skip_env if i % 2 == 0 else buffer_env)
        worker.start()
        harness.settle(conn, names, timeout=90)
        for k in range(kills):
            leader: Any = wait_for(lambda: harness.current_leader(conn), 30, what="a leader")
            victim = f.by_pid(leader.os_pid)
            harness.pause(rng.uniform(0.3, 1.5))
            victim.kill()
            f.spawn(env=skip_env if k % 2 == 0 else buffer_env)
            wait_for(lambda v=victim: (x := harness.current_leader(conn)) is not None and x.os_pid != v.pid,
                     30, interval=0.01, what="a new leader")
        end = harness.db_now(conn)
        wait_for(lambda: harness.caught_up(conn, names, end), 60, what="every schedule caught up")
        stop.set()
        worker.join(10)
        f.stop_all()
        problems = f.problems()
    outcome = check_overlap_fires(conn, names, end)
    violations = conn.execute("SELECT name, policy, active, waiting FROM rel.overlap_violation").fetchall()
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM awa.jobs WHERE metadata ->> 'cron_name' = ANY(%(n)s)) AS jobs, "
        "(SELECT count(*) FROM awa.fire_skips WHERE cron_name = ANY(%(n)s)) AS skips", {"n": names}).fetchone()
    summary.runs = kills
    summary.fires_checked = counts["jobs"] + counts["skips"]
    summary.duplicates = len(outcome.get("duplicates", [])) + len(outcome.get("fired and skipped", []))
    summary.losses = len(outcome.get("lost", [])) + len(outcome.get("never fired", []))
    summary.seconds = time.monotonic() - started
    summary.extra = {"seed": seed, "jobs": counts["jobs"], "skipped_overlap": counts["skips"]}
    assert outcome == {}, {k: v[:10] for k, v in outcome.items()}
    assert [dict(v) for v in violations] == []
    assert counts["jobs"] > 0 and counts["skips"] > 0  # both outcomes happened
    assert not problems, "\n".join(problems)


def test_overlap_crash_loop_catches_a_fire_statement_without_the_check(dsn: str, log_dir: Path) -> None:
    """The negative control: the same fleet with the overlap decision removed from the fire
    statement (reliability/app.py, a test-only fault) is caught by the same checks."""
    conn = harness.connect(dsn)
    conn.execute(OVERLAP_GUARD_SQL)  # type: ignore[arg-type]  # literal test SQL
    fault = {rel_app.OVERLAP_ENV: "skip", rel_app.FAULT_ENV: rel_app.NO_OVERLAP_GUARD}
    with harness.fleet(dsn, log_dir, count=5) as f:
        f.spawn(env=fault)
        harness.settle(conn, f.names)
        wait_for(lambda: conn.execute("SELECT count(*) AS n FROM rel.overlap_violation").fetchone()["n"] > 0, 30,
                 what="the guard to record a schedule with two jobs going")
        f.kill_all()  # a faulty runtime: no clean stop is asked of it
    assert conn.execute("SELECT count(*) AS n FROM awa.fire_skips").fetchone()["n"] == 0
