"""The schedules a stalled fleet leaves unfired, named by `check`: when no leader judges
health (none, a stalled one, or one whose evaluation stopped), the recorded words stay
`ok` while due fires pile up, so `check` names those OVERDUE by the database clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg

from awa_tui.engine.core.limits import OVERDUE_AFTER_S
from awa_tui.engine.health.models import FleetProblem

NAMED = 5  # names in the message; the rest counted
COUNT_CAP = 10_000  # counted up to this (a stalled fleet at 1M schedules: no full count)

# Through cron_jobs_due_idx (its predicate is this one): the most overdue first.
OVERDUE_SQL = """
SELECT c.name FROM awa.cron_jobs c
WHERE c.next_fire_at < %(before)s AND c.paused_at IS NULL AND c.retired_at IS NULL AND c.finished_at IS NULL
ORDER BY c.next_fire_at, c.name
LIMIT %(limit)s
"""


def overdue_problem(conn: psycopg.Connection[Any], now: datetime) -> FleetProblem | None:
    """`overdue`: the active schedules whose due fire waited OVERDUE_AFTER_S or more."""
    rows = conn.execute(OVERDUE_SQL, {"before": now - timedelta(seconds=OVERDUE_AFTER_S),
                                      "limit": COUNT_CAP + 1}).fetchall()
    if not rows:
        return None
    names = ", ".join(r["name"] for r in rows[:NAMED])
    more = len(rows) - NAMED
    count = f"{COUNT_CAP:,}+" if len(rows) > COUNT_CAP else f"{len(rows):,}"
    rest = f" and {more:,}{'+' if len(rows) > COUNT_CAP else ''} more" if more > 0 else ""
    return FleetProblem("overdue", f"{count} schedule{'s' if len(rows) != 1 else ''} overdue, nothing fires "
                        f"them: {names}{rest}")
