"""The words of health (S42), apart from its read models: the filter grammar and the
views name them without building every model class (issue 18)."""

from __future__ import annotations

# Every health a schedule can have. `finished` is a schedule past its bounds (issue 15).
HEALTHS = ("ok", "late", "failing", "missed", "paused", "retired", "broken", "finished")
# The unhealthy ones, worst first: the console's ATTENTION line and sort follow this.
UNHEALTHY = ("broken", "failing", "missed", "late")
