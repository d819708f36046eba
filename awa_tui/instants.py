"""Durations (`90s`, `1h30m`, `14d`) and instants (ISO-8601) typed by an operator: on the
command line (awa_tui/cli/timeargs.py) and in the console's filters (`since:2h`). Pure:
no database; `now` is passed in."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from awa_tui.engine.core.errors import ValidationError, short_repr

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"^(?:\d{1,9}[wdhms])+$")
_PART = re.compile(r"(\d+)([wdhms])")
MAX_DURATION = timedelta(days=3650)


def span_precise(seconds: float) -> str:
    """A duration with two units (1h05m, 3m20s), for countdowns that matter (the console's
    and the CLI's)."""
    seconds = int(abs(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    return f"{seconds // 86400}d{(seconds % 86400) // 3600:02d}h"


def parse_instant(text: str, option: str = "--after") -> datetime:
    """An ISO-8601 instant; a bare one is UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(
            f"{option}: expected an ISO-8601 instant such as 2025-03-08T00:00:00Z, got {text!r}"
        ) from None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # a bare time is UTC
    try:
        value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+05:00 is in year 0 in UTC
        raise ValidationError(
            f"{option}: {text!r} is outside the calendar in UTC (0001-01-01 to 9999-12-31)"
        ) from None
    return value


def parse_duration(text: str, option: str) -> timedelta:
    """`90s`, `15m`, `1h30m`, `14d`, `2w`: a one-line error naming the value otherwise."""
    if not _DURATION.match(text.strip().lower()):
        raise ValidationError(f"{option}: expected a duration such as 90s, 15m, 1h30m, 14d, got {text!r}")
    seconds = sum(int(n) * _UNITS[u] for n, u in _PART.findall(text.strip().lower()))
    if seconds > MAX_DURATION.total_seconds():
        raise ValidationError(f"{option}: {text!r} is longer than 10 years")
    return timedelta(seconds=seconds)


def duration_text(seconds: int) -> str:
    """Whole seconds as `parse_duration` reads them back, exactly: 5400 -> 1h30m, 90 -> 1m30s."""
    if seconds <= 0:
        return "0s"
    parts = []
    for unit, size in _UNITS.items():
        if unit != "w" and seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts)


def parse_days(texts: list[str], option: str) -> list[date | tuple[date, date]]:
    """Days a schedule never fires on, as `cron create --exclude` takes them: a date
    (2026-12-25) or an inclusive range (2026-12-20..2027-01-03), each in its zone."""
    out: list[date | tuple[date, date]] = []
    for text in texts:
        try:
            if ".." in text:
                first, last = text.split("..", 1)
                out.append((date.fromisoformat(first.strip()), date.fromisoformat(last.strip())))
            else:
                out.append(date.fromisoformat(text.strip()))
        except ValueError:
            raise ValidationError(f"{option}: expected a date (2026-12-25) or a range (2026-12-20..2027-01-03), "
                                  f"got {short_repr(text)}") from None
    return out


DAY_WORDS = {"today": 0, "yesterday": 1}  # midnight UTC of `now`'s day, or of the day before


def parse_point(text: str, option: str, now: datetime) -> datetime:
    """A duration ago (`2h`: two hours before `now`), `today` or `yesterday` (the start of
    that day in UTC, the zone every instant is shown in), or an ISO-8601 instant."""
    word = text.strip().lower()
    if word in DAY_WORDS:
        midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight - timedelta(days=DAY_WORDS[word])
    if text.strip() and text.strip()[0].isdigit() and _DURATION.match(text.strip().lower()):
        return now - parse_duration(text, option)
    try:
        return parse_instant(text, option)
    except ValidationError:
        raise ValidationError(
            f"{option}: expected a duration (90s, 2h, 14d), today, yesterday or an ISO-8601 instant, got {text!r}"
        ) from None


def parse_ahead(text: str, option: str) -> datetime | timedelta:
    """A duration from now (`2h`: kept as a duration, which the engine adds to the
    database's clock) or an ISO-8601 instant (a bare one is UTC)."""
    if text.strip() and text.strip()[0].isdigit() and _DURATION.match(text.strip().lower()):
        return parse_duration(text, option)
    try:
        return parse_instant(text, option)
    except ValidationError:
        raise ValidationError(
            f"{option}: expected a duration (90s, 2h, 1d) or an ISO-8601 instant, got {text!r}"
        ) from None


def check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise ValidationError(
            f"--since {since.isoformat()} is after --until {until.isoformat()}: the range is reversed")
