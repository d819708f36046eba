"""The values the evaluator keeps for itself are the ones the light modules name (issue 18):
engine/limits.py and engine/columns.py hold them so that a Client and the views are built
without importing the evaluator."""

from __future__ import annotations

from awa_tui.engine import columns, evaluator, limits


def test_the_catch_up_limit_is_the_evaluators() -> None:
    assert limits.CATCH_UP_LIMIT == evaluator.CATCH_UP_LIMIT == 1000


def test_the_fault_sql_is_the_evaluators() -> None:
    assert columns.FAULT_SQL == evaluator.FAULT_SQL
