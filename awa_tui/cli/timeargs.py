"""Durations (`90s`, `1h30m`, `14d`) and instants (ISO-8601) given on the command line."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated

import typer

from awa_tui.cli.cron import _parse_instant
from awa_tui.engine.errors import ValidationError

SinceOpt = Annotated[str | None, typer.Option("--since", help="A duration ago (2h, 7d) or an ISO-8601 instant.")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="A duration ago or an ISO-8601 instant.")]

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"^(?:\d{1,9}[wdhms])+$")
_PART = re.compile(r"(\d+)([wdhms])")
MAX_DURATION = timedelta(days=3650)


def parse_duration(text: str, option: str) -> timedelta:
    """`90s`, `15m`, `1h30m`, `14d`, `2w`: a one-line error naming the value otherwise."""
    if not _DURATION.match(text.strip().lower()):
        raise ValidationError(f"{option}: expected a duration such as 90s, 15m, 1h30m, 14d, got {text!r}")
    seconds = sum(int(n) * _UNITS[u] for n, u in _PART.findall(text.strip().lower()))
    if seconds > MAX_DURATION.total_seconds():
        raise ValidationError(f"{option}: {text!r} is longer than 10 years")
    return timedelta(seconds=seconds)


def parse_point(text: str, option: str, now: datetime) -> datetime:
    """A duration ago (`2h`: two hours before `now`) or an ISO-8601 instant."""
    if text.strip() and text.strip()[0].isdigit() and _DURATION.match(text.strip().lower()):
        return now - parse_duration(text, option)
    try:
        return _parse_instant(text, option)
    except ValidationError:
        raise ValidationError(
            f"{option}: expected a duration (90s, 2h, 14d) or an ISO-8601 instant, got {text!r}"
        ) from None


def check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise ValidationError(
            f"--since {since.isoformat()} is after --until {until.isoformat()}: the range is reversed")
