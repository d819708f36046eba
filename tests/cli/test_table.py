"""The CLI's plain-text tables (awa_tui/cli/table.py, issue 18): widths from the values,
nothing cut, database text escaped before it is laid out."""

from __future__ import annotations

from datetime import UTC, datetime

from awa_tui.cli.common import cell
from awa_tui.cli.table import cell_width, render
from awa_tui.engine.read.models import Fire


def test_columns_are_as_wide_as_their_widest_value_and_nothing_is_cut() -> None:
    long = "x" * 300
    assert render(["name", "state"], [["a", "active"], [long, "-"]], title="schedules") == (
        "schedules\n"
        f"name{' ' * 296}  state\n"
        f"{'-' * 300}  ------\n"
        f"a{' ' * 299}  active\n"
        f"{long}  -\n"
    )


def test_no_line_ends_in_padding_and_a_values_own_spaces_stay() -> None:
    assert render(["a", "b", "c"], [["1", "", ""], ["", "2 ", ""], ["333", "", "z"]]) == (
        "a    b   c\n"
        "---  --  -\n"
        "1\n"
        "     2 \n"
        "333      z\n"
    )


def test_an_empty_table_is_its_header_and_rule() -> None:
    assert render(["id", "state"], []) == "id  state\n--  -----\n"


def test_wide_characters_take_two_columns_and_combining_marks_none() -> None:
    assert (cell_width("abc"), cell_width("日本"), cell_width("e\u0301t\u00e9")) == (3, 4, 3)
    assert render(["n", "k"], [["日本", "x"], ["ab", "y"]]) == "n     k\n----  -\n日本  x\nab    y\n"


def test_a_cell_is_the_fields_text_escaped() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    fire = Fire(id=7, state="run\x1b[2J\nFORGED", attempt=1, created_at=at, fire_time=None, manual=True, lateness=None)
    assert [cell(fire, c) for c in ("id", "state", "created_at", "fire_time", "manual", "absent")] == [
        "7", "run\\x1b[2J\\nFORGED", "2026-01-02 03:04:05+0000", "-", "yes", "-"]
    assert [cell({"tags": ["a", "[b]"], "n": None}, c) for c in ("tags", "n")] == ['["a", "[b]"]', "-"]
