"""`why` paragraphs, and the leadership terms the ledger keeps (one row per term)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from ledger_helpers import at, db_now, force, job_created, lead, register

from awa_tui import Client
from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.runtime.leader import LeaderElector


def _terms(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    rows = conn.execute("SELECT term, instance_id, acquired_at, held_until FROM awa.leader_terms ORDER BY term")
    return [(r["term"], r["instance_id"], r["acquired_at"], r["held_until"]) for r in rows.fetchall()]


def test_terms_are_recorded_extended_on_renewal_and_cut_by_the_next(dsn: str, conn: psycopg.Connection[Any]) -> None:
    t0 = at("2025-01-01T00:00:00")
    first = LeaderElector(dsn, lease=timedelta(seconds=5))
    second = LeaderElector(dsn, lease=timedelta(seconds=5))
    try:
        assert first.step(now=t0)
        assert _terms(conn) == [(1, first.instance_id, t0, t0 + timedelta(seconds=5))]
        assert first.step(now=t0 + timedelta(seconds=2))  # a renewal extends the same row
        assert _terms(conn) == [(1, first.instance_id, t0, t0 + timedelta(seconds=7))]
        # The first leader froze: 20 s later the standby deposes it (its lease ran out at +7 s).
        assert second.step(now=t0 + timedelta(seconds=20))
        assert _terms(conn) == [
            (1, first.instance_id, t0, t0 + timedelta(seconds=7)),
            (2, second.instance_id, t0 + timedelta(seconds=20), t0 + timedelta(seconds=25)),
        ]
    finally:
        first.release()
        second.release()


def test_a_clean_release_ends_the_term_at_once(dsn: str, conn: psycopg.Connection[Any]) -> None:
    elector = LeaderElector(dsn, lease=timedelta(seconds=30))
    assert elector.step()
    [(_, _, acquired, until)] = _terms(conn)
    assert until == acquired + timedelta(seconds=30)
    elector.release()
    released = db_now(conn)
    [(_, _, _, ended)] = _terms(conn)
    assert acquired < ended <= released  # not the 30 s the lease would have run


def test_why_an_instant_that_is_not_due(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "hourly", "0 * * * *", at("2025-01-01T00:30:00"))
    lead(conn, at("2025-01-01T00:00:00"))
    assert client.reads.why("hourly", now=at("2025-01-01T00:40:00")).text == (
        "hourly: not due yet at 2025-01-01T00:40:00Z (next is 2025-01-01T01:00:00Z).")
    [job] = client.evaluate(now=at("2025-01-01T01:00:00")).jobs
    late = (job_created(conn, job.id) - at("2025-01-01T01:00:00")).total_seconds()
    late_text = f"{late:.3f}".rstrip("0").rstrip(".")
    answer = client.reads.why("hourly", at=at("2025-01-01T01:20:00"), now=at("2025-01-01T01:30:00"))
    assert answer.text == (
        "hourly: not due at 2025-01-01T01:20:00Z (next is 2025-01-01T02:00:00Z); the last due instant before it, "
        f"2025-01-01T01:00:00Z: fired (job {job.id}, {late_text}s late), waiting to run.")
    assert (answer.verdict is not None and answer.verdict.instant, answer.next_due) == (
        at("2025-01-01T01:00:00"), at("2025-01-01T02:00:00"))


def test_why_escapes_what_the_database_says(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "hourly", "0 * * * *", at("2025-01-01T00:30:00"))
    lead(conn, at("2025-01-01T00:00:00"))
    # Paused by hand (no audit row): the row's own paused_at and paused_by are the record.
    force(conn, "UPDATE awa.cron_jobs SET paused_at = %s, paused_by = %s WHERE name = 'hourly'",
          (at("2025-01-01T00:45:00"), "mallory\x1b[2J\n"))
    text = client.reads.why("hourly", now=at("2025-01-01T01:10:00")).text
    assert text == (
        "hourly: last due instant 2025-01-01T01:00:00Z: not fired: the schedule was paused by mallory\\x1b[2J\\n "
        "at 2025-01-01T00:45:00Z. Next due 2025-01-01T02:00:00Z. Now paused (by mallory\\x1b[2J\\n at "
        "2025-01-01T00:45:00Z).")
    assert "\x1b" not in text and "\n" not in text


def test_bad_input_is_one_line_naming_the_value(client: Client, conn: psycopg.Connection[Any]) -> None:
    register(client, conn, "hourly", "0 * * * *", at("2025-01-01T00:30:00"))
    with pytest.raises(NotFound, match=r"^unknown schedule 'nope'$"):
        client.reads.why("nope")
    with pytest.raises(NotFound, match=r"^unknown schedule 'nope'$"):
        client.reads.ledger("nope")
    with pytest.raises(ValidationError, match=r"^range: since 2025-01-02T00:00:00\+00:00 is after until "
                                              r"2025-01-01T00:00:00\+00:00$"):
        client.reads.ledger("hourly", since=at("2025-01-02T00:00:00"), until=at("2025-01-01T00:00:00"))
    with pytest.raises(ValidationError, match=r"^limit: expected 1..10000 instants, got 0$"):
        client.reads.ledger("hourly", limit=0)


def test_why_an_interval_instant(client: Client, conn: psycopg.Connection[Any]) -> None:
    # Every 90 s counted from its start, 00:10:00Z: 00:10:00, 00:11:30, 00:13:00 ...
    register(client, conn, "poll", "@every 90s", at("2025-01-01T00:00:00"), start_at=at("2025-01-01T00:10:00"))
    lead(conn, at("2025-01-01T00:00:00"))
    assert client.reads.why("poll", now=at("2025-01-01T00:05:00")).text == (
        "poll: not due yet at 2025-01-01T00:05:00Z (next is 2025-01-01T00:10:00Z).")
    [job] = client.evaluate(now=at("2025-01-01T00:10:00")).jobs
    late = (job_created(conn, job.id) - at("2025-01-01T00:10:00")).total_seconds()
    late_text = f"{late:.3f}".rstrip("0").rstrip(".")
    answer = client.reads.why("poll", at=at("2025-01-01T00:11:00"), now=at("2025-01-01T00:11:10"))
    assert answer.text == (
        "poll: not due at 2025-01-01T00:11:00Z (next is 2025-01-01T00:11:30Z); the last due instant before it, "
        f"2025-01-01T00:10:00Z: fired (job {job.id}, {late_text}s late), waiting to run.")
    # Missed while nothing evaluated: 00:11:30 was due and never fired.
    missed = client.reads.why("poll", now=at("2025-01-01T00:12:00"))
    assert (missed.verdict is not None and missed.verdict.instant, missed.next_due) == (
        at("2025-01-01T00:11:30"), at("2025-01-01T00:13:00"))
