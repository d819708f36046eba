"""The suite's own oracles, on fixed inputs with hand-written answers: what was due
(generate_series, never the engine's cron code), which storm instants must have fired
given the audit's intervals, and the guard table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from .harness import connect, due_instants, guard_violations, install_guards
from .test_operator_storm import must_have_fired

T0 = datetime(2026, 3, 8, 6, 59, 58, 400000, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_due_instants_are_the_whole_seconds_of_each_span_both_ends_included(dsn: str) -> None:
    conn = connect(dsn)
    whole = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
    got = due_instants(conn, "* * * * * *", [("a", at(0), whole + timedelta(seconds=2)), ("b", whole, whole)])
    assert got == [
        ("a", datetime(2026, 3, 8, 6, 59, 59, tzinfo=UTC)),
        ("a", whole),
        ("a", datetime(2026, 3, 8, 7, 0, 1, tzinfo=UTC)),
        ("a", datetime(2026, 3, 8, 7, 0, 2, tzinfo=UTC)),
        ("b", whole),
    ]
    minutes = due_instants(conn, "* * * * *", [("m", at(0), at(125))])
    assert [t for _, t in minutes] == [whole, whole + timedelta(minutes=1), whole + timedelta(minutes=2)]


def test_due_instants_refuse_an_expression_they_have_no_oracle_for(dsn: str) -> None:
    with pytest.raises(ValueError, match=r"no independent oracle for cron expression '0 \* \* \* \*'"):
        due_instants(connect(dsn), "0 * * * *", [])


END = at(100)


@pytest.mark.parametrize(("t", "initial", "events", "expected"), [
    (at(10), (False, False), [], True),  # active throughout
    (at(10), (True, False), [], False),  # retired throughout
    (at(10), (False, False), [(at(11), True, False)], False),  # retired 1 s later: maybe not fired yet
    (at(10), (False, False), [(at(13), True, False)], True),  # 3 s active first: must have fired
    (at(10), (True, False), [(at(5), False, False)], True),  # restored before the instant
    (at(10), (False, True), [(at(20), False, False)], True),  # held by a pause, replayed on resume
    (at(10), (False, True), [(at(20), False, False), (at(21), True, False)], False),  # retired before the replay
    (at(10), (False, True), [(at(20), True, True)], False),  # retired while paused: skipped (S28)
    (at(98), (False, False), [], False),  # too close to the end to judge
])
def test_must_have_fired_follows_the_audit_intervals(
    t: datetime, initial: tuple[bool, bool], events: list[Any], expected: bool
) -> None:
    assert must_have_fired(t, initial, events, END) is expected


def test_the_guards_record_a_fire_on_a_paused_row_and_a_delete(dsn: str) -> None:
    conn = connect(dsn)
    conn.execute("SET TIME ZONE 'UTC'")  # the lines below show timestamps
    install_guards(conn)  # proves its own probes, then leaves the table empty
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, paused_at) "
                 "VALUES ('g-1', '* * * * *', 'k', '2026-03-08T07:00:00Z')")
    conn.execute("SET application_name = 'oracle-test'")
    conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = '2026-03-08T07:01:00Z' WHERE name = 'g-1'")
    conn.execute("UPDATE awa.cron_jobs SET paused_at = NULL WHERE name = 'g-1'")  # a resume is no fire
    conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'g-1'")
    assert guard_violations(conn) == [
        "g-1 fired while paused (since 2026-03-08 07:00:00+00:00, fire 2026-03-08 07:01:00+00:00, by 'oracle-test')",
        "g-1 deleted (since None, fire None, by 'oracle-test')",
    ]
