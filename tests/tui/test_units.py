"""Pure pieces of the console: the cron describer, time formatting, jump resolution,
operation guards, and the launcher's argument checks."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.cron.describe import describe
from awa_tui.engine.read.models import ScheduleRow
from awa_tui.tui import operations
from awa_tui.tui.formatting import lateness, relative, span_precise
from awa_tui.tui.launch import build_config
from awa_tui.tui.panels.runtimes import attention

NOW = datetime(2025, 3, 8, 12, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize("expr,text", [
    ("* * * * *", "every minute"),
    ("*/5 * * * *", "every 5 minutes"),
    ("0 * * * *", "hourly at :00"),
    ("15 */2 * * *", "every 2 hours at :15"),
    ("30 2 * * *", "daily at 02:30"),
    ("0 9,17 * * *", "daily at 09:00, 17:00"),
    ("0 9 * * 1-5", "weekdays at 09:00"),
    ("0 9 * * MON,WED", "Mondays, Wednesdays at 09:00"),
    ("5 4 * * 7", "Sundays at 04:05"),
    ("0 0 1 * *", "monthly on day 1 at 00:00"),
    ("0 0 1 1 *", "yearly on Jan 1 at 00:00"),
    ("* * * * * *", "every second"),
    ("*/10 * * * * *", "every 10 seconds"),
    ("0 30 2 * * *", "daily at 02:30"),
    ("@hourly", "hourly at :00"),
    ("@weekly", "Sundays at 00:00"),
    # The day forms (S55), in words:
    ("0 0 L * *", "at 00:00 on the last day of the month"),
    ("0 9 * * TUE#2", "at 09:00 on the second Tuesday of the month"),
    ("0 17 * * 5L", "at 17:00 on the last Friday of the month"),
    ("0 17 * * fri#L", "at 17:00 on the last Friday of the month"),
    ("0 8 * * 1#1", "at 08:00 on the first Monday of the month"),
    ("0 0 15W * *", "at 00:00 on the weekday nearest the 15th"),
    ("0 0 1W * *", "at 00:00 on the weekday nearest the 1st"),
    ("0 0 22w * *", "at 00:00 on the weekday nearest the 22nd"),
    ("0 0 L-3 * *", "at 00:00, 3 days before the last day of the month"),
    ("0 0 L-1 * *", "at 00:00, 1 day before the last day of the month"),
    ("0 0 LW * *", "at 00:00 on the last weekday of the month"),
    ("0 0 L 2 *", "at 00:00 on the last day of the month, in Feb"),
    ("0 30 6 L * ?", "at 06:30 on the last day of the month"),
    ("0 0 ? * MON", "Mondays at 00:00"),
])
def test_common_shapes_are_described(expr, text):
    assert describe(expr) == text


@pytest.mark.parametrize("expr", ["1-5 * * * *", "0 9 1 * 1", "*/15 */2 * * *", "0 0 * 1-3 *", "0 0 1,15 * *x",
                                  "0 0 1,L * *", "0 0 L * MON", "0 0 * * 1-5#2", "0 0 L * 1-3"])
def test_anything_unusual_falls_back_to_the_expression(expr):
    assert describe(expr) == " ".join(expr.split())


def test_relative_times():
    assert relative(NOW + timedelta(minutes=4, seconds=12), NOW) == "in 4m12s"
    assert relative(NOW - timedelta(minutes=3, seconds=5), NOW) == "3m ago"
    assert relative(NOW, NOW) == "now"
    assert relative(None, NOW) == "-"
    assert span_precise(90061) == "1d01h"
    assert lateness(timedelta(seconds=1.24)) == "1.2s" and lateness(None) == "-"


def test_attention_from_the_lock_holder_and_its_lease():
    import uuid

    from awa_tui.engine.read.fleet import Leadership

    held = dict(backend_pid=77, instance_id=uuid.UUID(int=1), hostname="app-1", pid=4242)
    assert attention(Leadership(now=NOW, lease_expires_at=NOW + timedelta(seconds=3), **held)) is None
    assert attention(Leadership(now=NOW)) == "no live leader: nothing fires until a runtime takes the leader lock"
    assert attention(Leadership(now=NOW, lease_expires_at=NOW - timedelta(seconds=4), **held)) == (
        "leader STALLED: app-1 pid 4242 (instance 00000000) holds the lock but its lease expired 4s ago; "
        "nothing fires until a standby deposes it"
    )


def test_operations_refuse_nonsense_at_keypress():
    retired = ScheduleRow(
        name="x", cron_expr="* * * * *", timezone="UTC", kind="k", queue="q", priority=2, max_attempts=25,
        missed_fire_policy="coalesce", last_enqueued_at=None, next_fire_at=None, created_at=NOW, updated_at=NOW,
        paused_at=None, paused_by=None, owner=None, retired_at=NOW, retired_by="bob", fault=None,
        queue_paused=False, queue_paused_by=None, state="retired",
        overlap="allow", start_at=None, end_at=None, max_fires=None, fires_count=0, finished_at=None,
    )
    with pytest.raises(operations.NotPossible, match="restore it first"):
        operations.toggle_pause(retired)
    with pytest.raises(operations.NotPossible):
        operations.trigger(retired)
    with pytest.raises(operations.NotPossible, match="not retired"):
        operations.restore(replace(retired, state="active"))


def test_launcher_rejects_inconsistent_options():
    def say(_message: str) -> None:
        raise AssertionError("nothing should start")

    common = {"dsn": "postgresql://x@127.0.0.1:1/x", "read_only": False, "operator": None, "say": say}
    with pytest.raises(AwaError, match="add --lead"):
        build_config(lead=False, app_ref=None, demo=True, refresh=2.0, **common)
    with pytest.raises(AwaError, match="--refresh"):
        build_config(lead=False, app_ref=None, demo=False, refresh=0, **common)
    with pytest.raises(AwaError) as caught:
        build_config(lead=False, app_ref=None, demo=False, refresh=2.0, sql_jobs=True, **common)
    assert str(caught.value) == "--sql-jobs runs SQL jobs in the in-process engine: add --lead"


def test_launcher_builds_a_leading_console(dsn):
    config = build_config(dsn=dsn, lead=True, app_ref=None, demo=True, read_only=False, operator="op@test",
                          refresh=2.0, say=print)
    try:
        assert config.engine is not None and not config.engine.read_only  # the engine writes
        assert config.client is not config.engine and config.client.operator == "op@test"  # its own client
        assert "password" not in config.database and config.embedded_at is None
        assert {s.name for s in config.engine.schedules} >= {"demo.heartbeat"}
        assert "awa.sql" not in config.engine.handlers  # SQL jobs only when asked for
    finally:
        config.engine.close()
        config.client.close()


def test_a_leading_console_runs_sql_jobs_only_when_asked(dsn):
    config = build_config(dsn=dsn, lead=True, app_ref=None, demo=False, read_only=False, operator="op@test",
                          refresh=2.0, say=print, sql_jobs=True)
    try:
        assert config.engine is not None
        assert config.engine.handlers["awa.sql"].timeout == 605.0  # the statement's 600 s and the slack
    finally:
        config.engine.close()
        config.client.close()
    timed = build_config(dsn=dsn, lead=True, app_ref=None, demo=False, read_only=False, operator="op@test",
                         refresh=2.0, say=print, sql_jobs=True, sql_timeout=timedelta(seconds=30))
    try:
        assert timed.engine is not None
        assert timed.engine.handlers["awa.sql"].timeout == 35.0  # --sql-timeout 30 and the slack
    finally:
        timed.engine.close()
        timed.client.close()
