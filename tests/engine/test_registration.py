"""Registration at scale (issue 18): the one-pass size of plain JSON values agrees with the
careful measure wherever it answers, and hands everything unusual to the careful checks
(whose one-line refusals are unchanged); a schedule keeps no per-instance __dict__."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from awa_tui.engine.errors import ValidationError
from awa_tui.engine.schedule import Schedule, _plain_json_size, _stored_json_size


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
