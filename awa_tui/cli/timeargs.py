"""The `--since`/`--until` options; the parsing itself is awa_tui/instants.py (the console's
filters use it too)."""

from __future__ import annotations

from typing import Annotated

import typer

from awa_tui.instants import MAX_DURATION, check_range, parse_duration, parse_point

__all__ = ["MAX_DURATION", "SinceOpt", "UntilOpt", "check_range", "parse_duration", "parse_point"]

SinceOpt = Annotated[str | None, typer.Option("--since", help=(
    "A duration ago (2h, 7d), today or yesterday (from 00:00 UTC), or an ISO-8601 instant."))]
UntilOpt = Annotated[str | None, typer.Option("--until", help=(
    "A duration ago, today or yesterday (00:00 UTC), or an ISO-8601 instant."))]
