"""`health:` in the filter grammar (S42): one of the healths, case-insensitive, negatable."""

from __future__ import annotations

import pytest

from awa_tui.filters import FilterError, Term, parse


def test_health_takes_one_of_the_healths() -> None:
    assert parse("health:Missed -health:ok", "schedules").terms == (
        Term("field", "health", "missed"), Term("field", "health", "ok", negated=True))
    with pytest.raises(FilterError) as exc:
        parse("health:sleepy", "schedules")
    assert str(exc.value) == ("filter: health: unknown value 'sleepy'; values are ok, late, failing, missed, "
                              "paused, retired, broken, finished")
