"""The next-fire hint a sync writes on each row it inserts (S52).

A row inserted without a hint waits for a pass to compute it (S51, by group): at a
million fresh rows, that is minutes of hint writes while the first boundaries fall due.
The sync knows what the pass would compute. An inserted row's `created_at` is the sync
transaction's `now()` (the column's default) and it never fired, so its hint is S13's:
the first instant after `created_at` minus the first-fire lookback (evaluator.first_candidate),
the same for every row of one (cron_expr, timezone), computed once per pair.

Left NULL, for a pass to decide as before:
- rows with bounds (start_at, end_at, max_fires: S46), whose hint depends on them;
- pairs met after the sync's BUDGET_S of cron arithmetic (a registry of 100k distinct
  expressions would otherwise spend ~13 s of this machine's CPU inside the sync
  transaction), and pairs whose calendar runs out (S15 reports those per pass).
"""

from __future__ import annotations

import time
from datetime import datetime

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.expression import compile_cron
from awa_tui.engine.firing.evaluator import first_candidate
from awa_tui.engine.schedules.definition import Schedule, instant_text

BUDGET_S = 2.0  # cron arithmetic per sync transaction; past it, new pairs are left NULL


class FirstHints:
    """The hints of rows created at `created_at` (one sync transaction's now())."""

    def __init__(self, created_at: datetime, budget_s: float = BUDGET_S) -> None:
        self.candidate = first_candidate({"last_enqueued_at": None, "created_at": created_at})
        self._known: dict[tuple[str, str], str | None] = {}
        self._deadline = time.monotonic() + budget_s

    def of(self, schedule: Schedule) -> str | None:
        """The hint as the input rows carry instants (awa.instant_text), or None."""
        if schedule.start_at is not None or schedule.end_at is not None or schedule.max_fires is not None:
            return None
        key = (schedule.cron_expr, schedule.timezone)
        if key in self._known:
            return self._known[key]
        if time.monotonic() > self._deadline:
            return None  # not remembered: a pair already known is still served
        try:
            hint = instant_text(compile_cron(*key).next_after(self.candidate).at)
        except (ValidationError, OverflowError):
            hint = None
        self._known[key] = hint
        return hint
