"""Registration at scale (issue 18): the one-pass size of plain JSON values agrees with the
careful measure wherever it answers, and hands everything unusual to the careful checks
(whose one-line refusals are unchanged); a schedule keeps no per-instance __dict__."""

from __future__ import annotations

import dataclasses
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.schedules.definition import _FIELDS, Schedule, _plain_json_size, _stored_json_size


class _Str(str):
    pass


PLAIN: list[Any] = [
    {"i": 1}, {"a": "b", "c": [1, 2, {"d": None}]}, {"é": "ünïcødé", "k": True, "f": False},
    {"n": -12345678901234567890}, {"x": 1.5, "y": -0.0, "z": 100.0, "w": 0.1},
    {"nested": {"deeper": {"deepest": []}}}, {"t": (1, "two")}, {"": ""}, {"emoji": "\U0001f600"},
]
UNUSUAL: list[Any] = [
    {"x": 1e16}, {"x": 1e-7}, {"x": float("nan")}, {"x": float("inf")}, {"q": 'say "hi"'}, {"b": "back\\slash"},
    {"nl": "a\nb"}, {"nul": "a\x00b"}, {"s": "\udc80"}, {1: "int key"}, {"sub": _Str("x")}, {"obj": object()},
    {"big": 10**400},
]


@pytest.mark.parametrize("value", PLAIN)
def test_the_one_pass_size_of_plain_values_is_the_careful_one(value: Any) -> None:
    assert _plain_json_size(value, 0) == _stored_json_size(value)


@pytest.mark.parametrize("value", UNUSUAL)
def test_unusual_values_go_to_the_careful_checks(value: Any) -> None:
    assert _plain_json_size(value, 0) is None


def test_deep_nesting_goes_to_the_careful_checks() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100):
        node["d"] = {}
        node = node["d"]
    assert _plain_json_size(deep, 0) is None
    assert Schedule.build("deep", "* * * * *", "k", deep).args == deep  # still accepted


def test_refusals_are_the_careful_ones() -> None:
    cases = {
        "nan": ({"x": float("nan")}, "args: not JSON-serialisable (Out of range float values are not JSON compliant"),
        "key": ({1: "x"}, "args: object keys must be strings, got 1"),
        "nul": ({"a": "a\x00b"}, "args: must not contain NUL characters, got 'a\\x00b'"),
    }
    for value, message in cases.values():
        with pytest.raises(ValidationError) as caught:
            Schedule.build("s", "* * * * *", "k", value)
        assert str(caught.value).startswith(message)


def test_a_schedule_has_no_instance_dict_and_shares_equal_tags() -> None:
    a = Schedule.build("a", "* * * * *", "k", tags=["x", "y"])
    b = Schedule.build("b", "* * * * *", "k", tags=("x", "y"))
    assert not hasattr(a, "__dict__")
    assert a.tags is b.tags == ("x", "y")
    assert sys.getsizeof(a) < 300


def test_build_fills_every_field_as_the_constructor_does() -> None:
    # build assigns the fields positionally in _FIELDS order, bypassing __init__.
    assert _FIELDS == tuple(f.name for f in dataclasses.fields(Schedule))
    built = Schedule.build("n", "H 3 * * *", "k", {"a": [1, "x"]}, timezone="Europe/Berlin", queue="q",
                           priority=3, max_attempts=7, tags=["t"], metadata={"m": True},
                           missed_fire_policy="catch_up", max_lateness=90, expect_success_within=30,
                           max_consecutive_failures=2, pause_after_failures=4, overlap="skip",
                           start_at=datetime(2026, 1, 1, tzinfo=UTC), max_fires=5, jitter=timedelta(seconds=2))
    assert built == Schedule(
        name="n", cron_expr=built.cron_expr, kind="k", args={"a": [1, "x"]}, timezone="Europe/Berlin",
        queue="q", priority=3, max_attempts=7, tags=("t",), metadata={"m": True}, missed_fire_policy="catch_up",
        max_lateness=90, expect_success_within=30, max_consecutive_failures=2, pause_after_failures=4,
        overlap="skip", start_at=datetime(2026, 1, 1, tzinfo=UTC), max_fires=5, cron_written="H 3 * * *",
        jitter_ms=2000,
    )
    assert built.cron_written == "H 3 * * *" and built.cron_expr.endswith(" 3 * * *") and "H" not in built.cron_expr
    with pytest.raises(ValidationError) as caught:
        Schedule.build("n", "* * * * *", "k", priority=9)
    assert str(caught.value) == "priority: must be an integer 1..4, got 9"
