"""The sanitiser (awa_tui/printable.py): what is escaped and how, what is left alone, and
the logging side (one escaped line per record, whichever handler writes it)."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from awa_tui.printable import PrintableFormatter, printable, printable_lines, printable_logger, printable_row

ROOT = Path(__file__).resolve().parents[2]

# The code points that must never reach a terminal, spelled out from the issue (not from
# the module under test): C0, DEL, C1, the bidi controls, and the two Unicode line breaks.
FORBIDDEN = (
    set(range(0x00, 0x20)) | {0x7F} | set(range(0x80, 0xA0))
    | {0x061C, 0x200E, 0x200F, 0x2028, 0x2029} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))
)


def test_each_kind_of_control_has_its_exact_visible_form() -> None:
    cases = {
        "\x1b[2J": "\\x1b[2J",                      # erase the screen
        "\x1b]0;title\x07": "\\x1b]0;title\\x07",   # OSC 0: window title, BEL-terminated
        "\x1b]52;c;aGk=\x1b\\": "\\x1b]52;c;aGk=\\x1b\\",  # OSC 52 clipboard, ST-terminated
        "a\nb": "a\\nb",
        "a\rb": "a\\rb",
        "a\tb": "a\\tb",
        "\x00": "\\x00",
        "\x7f": "\\x7f",
        "\x80": "\\x80",
        "\x9b2J": "\\x9b2J",                        # C1 CSI
        "\x9f": "\\x9f",
        "abc\u202eexe.txt": "abc\\u202eexe.txt",    # right-to-left override
        "\u061c\u200e\u200f": "\\u061c\\u200e\\u200f",
        "\u2066\u2067\u2068\u2069": "\\u2066\\u2067\\u2068\\u2069",
        "\u202a\u202b\u202c\u202d": "\\u202a\\u202b\\u202c\\u202d",
        "\u2028\u2029": "\\u2028\\u2029",
    }
    assert {raw: printable(raw) for raw in cases} == cases


def test_ordinary_text_markup_and_backslashes_are_left_alone() -> None:
    for text in ("nightly-billing", "[bold]x[/bold]", ":fire:", "C:\\temp\\new", "\\x1b typed", "日本語 ✓ é",
                 "\u00a0nbsp", "emoji 🎉", ""):
        assert printable(text) == text
    assert printable(42) == "42"
    assert printable(None) == "None"


def test_every_forbidden_code_point_is_escaped_and_every_other_one_kept() -> None:
    for code in range(0x0, 0x3000):
        char = chr(code)
        shown = printable(char)
        if code in FORBIDDEN:
            assert shown.startswith("\\") and len(shown) in (2, 4, 6) and shown.isascii(), hex(code)
        else:
            assert shown == char, hex(code)


@given(st.text())
def test_output_never_contains_a_forbidden_code_point_and_is_idempotent(text: str) -> None:
    shown = printable(text)
    assert not any(ord(c) in FORBIDDEN for c in shown)
    assert printable(shown) == shown  # layers that each sanitise never double-escape


@given(st.text())
def test_json_text_passes_through_unchanged(text: str) -> None:
    encoded = json.dumps({"value": text})
    assert printable(encoded) == encoded


def test_printable_lines_keeps_only_the_texts_own_line_breaks() -> None:
    assert printable_lines("Traceback\n  x\x1b[2J\nValueError: a\rb") == "Traceback\n  x\\x1b[2J\nValueError: a\\rb"


def test_printable_row_escapes_every_string_at_any_depth_and_keeps_other_types() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = {
        "name": "a\x1bb", "count": 3, "at": at, "none": None, "flag": True,
        "tags": ["t\n1", "ok"], "pair": ("x\x07", 1), "nested": {"k\x9b": [{"m": "\u202e"}]},
    }
    assert printable_row(row) == {
        "name": "a\\x1bb", "count": 3, "at": at, "none": None, "flag": True,
        "tags": ["t\\n1", "ok"], "pair": ("x\\x07", 1), "nested": {"k\\x9b": [{"m": "\\u202e"}]},
    }
    assert row["name"] == "a\x1bb"  # a copy: the real row is what actions use


def _capture(logger: logging.Logger, formatter: logging.Formatter | None = None) -> io.StringIO:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter or logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return stream


def test_a_guarded_logger_writes_one_escaped_line_through_any_handler() -> None:
    name = f"awa_tui.test_{uuid.uuid4().hex[:8]}"
    log = printable_logger(name)
    assert printable_logger(name) is log and log.filters.count(log.filters[0]) == 1  # installed once
    stream = _capture(log)  # a plain formatter, as an application would configure
    log.info("fired %s -> job %s", "evil\x1b]0;PWNED\x07\n2026-01-01 INFO awa_tui: forged", 7)
    assert stream.getvalue() == (
        f"INFO {name}: fired evil\\x1b]0;PWNED\\x07\\n2026-01-01 INFO awa_tui: forged -> job 7\n"
    )


def test_a_guarded_logger_escapes_the_exception_text_but_keeps_the_traceback_lines() -> None:
    log = printable_logger(f"awa_tui.test_{uuid.uuid4().hex[:8]}")
    stream = _capture(log)
    try:
        raise ValueError("bad kind \x1b[2J")
    except ValueError:
        log.exception("job %s failed", "k\x07")
    text = stream.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    lines = text.splitlines()
    assert lines[0].endswith("job k\\x07 failed")
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: bad kind \\x1b[2J"


def test_the_runtime_formatter_escapes_records_of_any_logger() -> None:
    log = logging.getLogger(f"elsewhere.{uuid.uuid4().hex[:8]}")  # not guarded: the formatter alone
    stream = _capture(log, PrintableFormatter("%(levelname)s: %(message)s"))
    log.warning("queue %s\r\n", "q\x9b2J\u202e")
    assert stream.getvalue() == "WARNING: queue q\\x9b2J\\u202e\\r\\n\n"


def test_every_logger_of_the_package_is_a_guarded_one() -> None:
    assignment = re.compile(r"^\s*\w+\s*=\s*logging\.getLogger\(", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT)) for path in (ROOT / "awa_tui").rglob("*.py")
        if path.name != "printable.py" and assignment.search(path.read_text())
    ]
    assert offenders == []


def test_the_sanitiser_imports_neither_textual_nor_rich() -> None:
    code = "import sys, awa_tui.printable; print(sorted(m for m in ('rich', 'textual') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
