"""The pass's own timeouts (S59), on a real server: a lock wait ends on the lock timeout
(and, the negative control, without one the same pass waits for as long as the lock is
held); a statement timeout of the database far shorter than a fire chunk does not make a
pass that can never complete: the fires go out in halved statements, every one exactly
once."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.core.limits import DEFAULT_LOCK_TIMEOUT
from awa_tui.engine.firing import evaluator

from .harness import Summary, connect

NOW = datetime(2025, 1, 1, 0, 5, tzinfo=UTC)
SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, missed_fire_policy, created_at, last_enqueued_at)
SELECT format('t-%%s', lpad(i::text, 6, '0')), '* * * * *', 'UTC', 'k', 'catch_up', %(last)s, %(last)s
FROM generate_series(1, %(n)s) AS i
"""
WAITING_SQL = "SELECT relation::regclass::text AS relation FROM pg_locks WHERE pid = %s AND NOT granted"


def _seed(conn: psycopg.Connection[Any], n: int, missed: int) -> None:
    conn.execute(SEED_SQL, {"n": n, "last": NOW - timedelta(minutes=missed)})


def _evaluate_in_thread(dsn: str, timeouts: evaluator.Timeouts) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}
    conn = connect(dsn)
    out["pid"] = conn.info.backend_pid

    def run() -> None:
        began = time.monotonic()
        try:
            out["result"] = evaluator.evaluate(conn, NOW, timeouts=timeouts)
        except evaluator.PassTimedOut as exc:
            out["error"] = exc
        out["took"] = time.monotonic() - began
        conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_lock_wait_ends_on_the_lock_timeout_and_without_one_it_would_not(dsn: str, summary: Summary) -> None:
    admin = connect(dsn)
    _seed(admin, 20, 1)
    locker = connect(dsn)
    with locker.transaction():
        locker.execute("LOCK TABLE awa.jobs IN ACCESS EXCLUSIVE MODE")
        # Negative control: a lock timeout longer than the hold: the pass just waits.
        patient, waited = _evaluate_in_thread(dsn, evaluator.Timeouts(lock_ms=600_000, statement_ms=600_000))
        wait_for(lambda: admin.execute(WAITING_SQL, (waited["pid"],)).fetchall(), 10, what="the pass waiting")
        assert admin.execute(WAITING_SQL, (waited["pid"],)).fetchall() == [{"relation": "awa.jobs"}]
        # With the default lock timeout the same pass gives up, with nothing written.
        bounded, gave_up = _evaluate_in_thread(dsn, evaluator.Timeouts())
        bounded.join(30)
        assert not bounded.is_alive()
        assert isinstance(gave_up.get("error"), evaluator.PassTimedOut), gave_up
        assert "canceling statement due to lock timeout" in str(gave_up["error"])
        assert gave_up["error"].now == NOW
        timeout_s = DEFAULT_LOCK_TIMEOUT.total_seconds()
        assert timeout_s <= gave_up["took"] < timeout_s + 5
        # The patient pass is still waiting, well past the lock timeout.
        assert patient.is_alive()
        assert admin.execute(WAITING_SQL, (waited["pid"],)).fetchall() == [{"relation": "awa.jobs"}]
    patient.join(30)
    assert not patient.is_alive()
    assert waited["result"].fired == 20  # it fired once the lock was released
    assert admin.execute("SELECT count(*) AS n FROM awa.jobs").fetchone()["n"] == 20  # the bounded one: nothing
    summary.runs = 1
    summary.notes = (f"bounded pass gave up after {gave_up['took']:.1f} s; unbounded one still waiting then, "
                     f"fired after release (waited {waited['took']:.1f} s)")


SCHEDULES = 4000
MISSED = 5  # minutes: 5 fires a schedule, 20,000 in all, four chunks of 5,000 fires
DB_STATEMENT_TIMEOUT = "250ms"
HOLD_KEY = 5959
# The fault, made certain: a fire statement of more than 500 schedules (2,500 fires) waits,
# after its rows, on an advisory lock the test holds, so the database's statement timeout
# cancels it whatever the machine's speed; smaller statements never wait.
HOLD_BIG_FIRES_SQL = f"""
CREATE FUNCTION public.hold_big_fires() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM fired) > 2500 THEN
        PERFORM pg_advisory_xact_lock_shared({HOLD_KEY});
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER hold_big_fires AFTER INSERT ON awa.jobs REFERENCING NEW TABLE AS fired
    FOR EACH STATEMENT EXECUTE FUNCTION public.hold_big_fires();
"""


def test_a_short_database_statement_timeout_degrades_to_smaller_statements(
    dsn: str, summary: Summary, caplog: pytest.LogCaptureFixture
) -> None:
    admin = connect(dsn)
    _seed(admin, SCHEDULES, MISSED)
    admin.execute(HOLD_BIG_FIRES_SQL)
    dbname = admin.info.dbname
    admin.execute(f'ALTER DATABASE "{dbname}" SET statement_timeout = \'{DB_STATEMENT_TIMEOUT}\'')
    conn = connect(dsn)  # a new session gets the database's setting
    assert conn.execute("SHOW statement_timeout").fetchone() == {"statement_timeout": DB_STATEMENT_TIMEOUT}
    # Kept by the pass's own settings: theirs is longer.
    with conn.transaction():
        conn.execute(evaluator.DEFAULT_TIMEOUTS.fire_sql)
        assert conn.execute("SHOW statement_timeout").fetchone() == {"statement_timeout": DB_STATEMENT_TIMEOUT}
    evaluator._statement_cap.clear()
    caplog.set_level(logging.WARNING, logger="awa_tui.evaluator")
    with connect(dsn) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (HOLD_KEY,))  # held for the whole pass
        began = time.monotonic()
        result = evaluator.evaluate(conn, NOW)
        took = time.monotonic() - began
    cancelled = [r.getMessage() for r in caplog.records if "was cancelled after" in r.getMessage()]
    # The fault happened: a whole chunk (1000 schedules, 5000 fires) waited on the held lock
    # until the database's timeout cancelled it, then the statements were halved (each step
    # logged, measured).
    assert cancelled and cancelled[0].startswith("a fire statement of 1000 schedules was cancelled after ")
    assert int(cancelled[0].split(" after ")[1].split(" ms ")[0]) >= 250  # not before the timeout
    assert "canceling statement due to statement timeout" in cancelled[0]
    assert cancelled[0].endswith("firing in statements of at most 500")
    # Every fire exactly once (oracle by hand: the 5 minutes after each token).
    assert (result.fired, result.errors) == (SCHEDULES * MISSED, [])
    rows = admin.execute("SELECT metadata ->> 'cron_fire_time' AS fire, count(*) AS n, "
                         "count(DISTINCT metadata ->> 'cron_name') AS names FROM awa.jobs GROUP BY 1 ORDER BY 1"
                         ).fetchall()
    expected = [(NOW - timedelta(minutes=MISSED - 1 - i)).strftime("%Y-%m-%dT%H:%M:%SZ") for i in range(MISSED)]
    assert rows == [{"fire": f, "n": SCHEDULES, "names": SCHEDULES} for f in expected]
    assert admin.execute("SELECT count(*) AS n FROM awa.cron_jobs WHERE last_enqueued_at = %s",
                         (NOW,)).fetchone() == {"n": SCHEDULES}
    smallest = min(int(m.rsplit(" ", 1)[1]) for m in cancelled)
    summary.runs = 1
    summary.fires_checked = result.fired
    summary.duplicates = 0
    summary.losses = 0
    summary.notes = (f"database statement_timeout {DB_STATEMENT_TIMEOUT}: {len(cancelled)} cancelled statements, "
                     f"down to {smallest} schedules a statement; the pass took {took:.1f} s")
    summary.extra = {"cancelled": cancelled, "pass_s": took}


# A probe of what the fire statement ran under: every insert into awa.jobs records the
# timeouts in force in its transaction.
PROBE_SQL = """
CREATE TABLE public.timeouts_seen (lock_timeout text, statement_timeout text);
CREATE FUNCTION public.record_timeouts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.timeouts_seen VALUES (current_setting('lock_timeout'), current_setting('statement_timeout'));
    RETURN NULL;
END $$;
CREATE TRIGGER record_timeouts AFTER INSERT ON awa.jobs FOR EACH STATEMENT EXECUTE FUNCTION public.record_timeouts();
"""


def _shown_timeouts(conn: psycopg.Connection[Any]) -> dict[str, str]:
    return {**conn.execute("SHOW lock_timeout").fetchone(), **conn.execute("SHOW statement_timeout").fetchone()}


def test_a_pass_leaves_its_pooled_connection_with_the_session_timeouts(dsn: str) -> None:
    """S59: the pass's timeouts are its transactions' own (SET LOCAL): the connection goes
    back to the client's pool with the timeouts it had, not the pass's."""
    admin = connect(dsn)
    _seed(admin, 1, 1)  # one schedule, one fire due at NOW
    admin.execute(PROBE_SQL)
    client = Client(dsn, operator="tester@test", lock_timeout=timedelta(milliseconds=1500),
                    statement_timeout=timedelta(seconds=7))
    try:
        with client.db.connection() as pooled:  # opened now, then idle in the pool: the pass reuses it
            pid = pooled.info.backend_pid
            before = _shown_timeouts(pooled)
        assert before == {"lock_timeout": "0", "statement_timeout": "0"}  # the server's defaults
        result = client.evaluate(now=NOW)
        assert (result.fired, result.errors) == (1, [])
        # The fire ran under the pass's timeouts...
        assert admin.execute("SELECT * FROM public.timeouts_seen").fetchall() == [
            {"lock_timeout": "1500ms", "statement_timeout": "7s"}]
        # ...and the same pooled connection has its own back.
        with client.db.connection() as pooled:
            assert pooled.info.backend_pid == pid
            assert _shown_timeouts(pooled) == before
    finally:
        client.close()
