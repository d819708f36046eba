"""The console's request for a schedule made at run time (actions/made.ScheduleRequest):
the settings `cron create` takes beyond the common ones, and an edit's `cleared`, which
takes optional settings away as `cron edit --clear` does. Real database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from awa_tui.engine.actions.made import ScheduleRequest
from awa_tui.engine.core.errors import ValidationError

NAME = "made.by-request"
COLUMNS = "start_at, end_at, max_fires, jitter_ms, exclude_dates, exclude_calendars"


def _row(conn: Any) -> dict[str, Any]:
    return conn.execute(f"SELECT {COLUMNS} FROM awa.cron_jobs WHERE name = %s", (NAME,)).fetchone()


def test_the_optional_settings_are_written_and_cleared_ones_taken_away(client: Any, conn: Any) -> None:
    client.actions.set_calendar("holidays", [(date(2030, 12, 25), date(2030, 12, 26))])
    client.actions.create_schedule(NAME, ScheduleRequest(
        cron="0 8 * * 1", kind="report", start_at=datetime(2030, 1, 1, tzinfo=UTC),
        end_at=datetime(2031, 1, 1, tzinfo=UTC), max_fires=3, jitter=timedelta(minutes=5),
        exclude=(date(2030, 3, 4), (date(2030, 4, 1), date(2030, 4, 8))), calendar=("holidays",)))
    assert _row(conn) == {"start_at": datetime(2030, 1, 1, tzinfo=UTC), "end_at": datetime(2031, 1, 1, tzinfo=UTC),
                          "max_fires": 3, "jitter_ms": 300_000,
                          "exclude_dates": [["2030-03-04", "2030-03-04"], ["2030-04-01", "2030-04-08"]],
                          "exclude_calendars": ["holidays"]}
    client.actions.edit_schedule(NAME, ScheduleRequest(max_fires=5, cleared=("start_at", "jitter", "calendar")))
    assert _row(conn) == {"start_at": None, "end_at": datetime(2031, 1, 1, tzinfo=UTC), "max_fires": 5,
                          "jitter_ms": 0, "exclude_dates": [["2030-03-04", "2030-03-04"], ["2030-04-01", "2030-04-08"]],
                          "exclude_calendars": None}


@pytest.mark.parametrize(("request_", "words"), [
    (ScheduleRequest(cleared=("queue",)),
     "queue: not a setting that can be taken away (one of start_at, end_at, max_fires, jitter, exclude, calendar)"),
    (ScheduleRequest(max_fires=2, cleared=("max_fires",)), "max_fires: given a value and taken away; one of them"),
])
def test_a_clear_that_cannot_be_is_refused_in_one_line(request_: ScheduleRequest, words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        request_.settings()
    assert str(refused.value) == words
