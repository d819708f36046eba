"""The day words of --since/--until and the console's since:/until: (`today`, `yesterday`):
the start of that day in UTC at an injected `now`, whatever zone `now` is written in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from awa_tui.cli.timeargs import parse_point
from awa_tui.engine.core.errors import ValidationError

NOW = datetime(2025, 3, 8, 12, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("today", datetime(2025, 3, 8, tzinfo=UTC)),
    ("yesterday", datetime(2025, 3, 7, tzinfo=UTC)),
    (" Yesterday ", datetime(2025, 3, 7, tzinfo=UTC)),
    ("TODAY", datetime(2025, 3, 8, tzinfo=UTC)),
    ("2h", datetime(2025, 3, 8, 10, 0, 30, tzinfo=UTC)),
])
def test_day_words(text: str, expected: datetime) -> None:
    assert parse_point(text, "--since", NOW) == expected


def test_day_words_are_utc_days() -> None:
    # 01:00 on Mar 9 in UTC+3 is 22:00 on Mar 8 in UTC: today is Mar 8 (the zone instants are shown in).
    now = datetime(2025, 3, 9, 1, 0, tzinfo=timezone(timedelta(hours=3)))
    assert parse_point("today", "--since", now) == datetime(2025, 3, 8, tzinfo=UTC)
    assert parse_point("yesterday", "--until", now) == datetime(2025, 3, 7, tzinfo=UTC)


def test_other_words_are_one_line() -> None:
    with pytest.raises(ValidationError) as err:
        parse_point("tomorrow", "--since", NOW)
    assert str(err.value) == ("--since: expected a duration (90s, 2h, 14d), today, yesterday or an ISO-8601 "
                              "instant, got 'tomorrow'")


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (45, "45s"), (90, "1m30s"), (300, "5m"), (5400, "1h30m"), (86400, "1d"), (90061, "1d1h1m1s"),
    (1209600, "14d"),
])
def test_a_duration_is_written_as_it_is_read_back(seconds: int, text: str) -> None:
    """The schedule form fills a stored jitter with it: the text reads back to the same value."""
    from awa_tui.instants import duration_text, parse_duration

    assert duration_text(seconds) == text
    assert parse_duration(text, "--jitter") == timedelta(seconds=seconds)
