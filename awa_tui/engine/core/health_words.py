"""The words of health (S42), apart from its read models: the filter grammar and the
views name them without building every model class
(a short command starts faster)."""

from __future__ import annotations

# Every health a schedule can have. `finished` is a schedule past its bounds (S46).
HEALTHS = ("ok", "late", "failing", "missed", "paused", "retired", "broken", "finished")
# The unhealthy ones, worst first: the console's ATTENTION line and sort follow this.
UNHEALTHY = ("broken", "failing", "missed", "late")
