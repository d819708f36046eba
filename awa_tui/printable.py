"""The one sanitiser for strings that reach a terminal or a log line.

Anything can write SQL, so a schedule name, an owner, a hostname or a job error read
from the database may hold bytes a terminal obeys: ESC sequences (clear the screen, set
the window title, OSC 52 writes the clipboard), BEL, C1 controls (U+009B is a CSI on
its own), a newline or carriage return that forges a table row or a log line, and
bidi controls that reorder what an operator reads. `printable()` shows each of them
visibly and never emits it:

- tab, newline and carriage return as ``\\t`` ``\\n`` ``\\r``;
- the rest of C0 (U+0000-U+001F), DEL and C1 (U+0080-U+009F) as ``\\xHH``;
- bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the
  Unicode line/paragraph separators U+2028, U+2029 (line breaks to Python and to
  some log viewers) as ``\\uHHHH``.

The backslash itself is NOT escaped (decided): the output is for eyes, and `--json` is
the lossless form for programs. This keeps `printable` idempotent, so the layers that
each sanitise (the engine's log filter, the CLI's output helpers, the console's
formatting) never double-escape, and JSON text, which already escapes every control,
passes through unchanged. The price: a name that literally contains the four characters
``\\x1b`` looks like one that contains ESC; both are shown, neither is obeyed.

Markup is a separate matter: the CLI and the console hand these strings to Rich and
Textual as plain Text, never as markup (see awa_tui/cli/common.py, awa_tui/tui).
No Textual, no Rich here: the engine imports this module.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import functools
import logging
import re
import uuid
from collections.abc import Hashable
from typing import Any, cast

# One character class: every code point that must not reach a terminal as itself.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object) -> str:
    """`value` as text safe for a terminal or a log line: one line, no control character."""
    text = value if isinstance(value, str) else str(value)
    # The common case (nothing to escape) costs one regex scan and returns the same object.
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def printable_lines(text: str) -> str:
    """Like `printable`, but the text's own line breaks stay (a traceback stays readable)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def printable_row(value: Any) -> Any:
    """A display copy of a row from the database (a dict or a read model): every string in
    it, at any depth (dict keys included), through `printable`; numbers, times and None
    unchanged. The raw row stays what actions use (the real name of a schedule, not its
    shown form). Where nothing needed escaping (almost always) the value itself comes
    back, not a copy (read models are frozen; a shown value is read, never written):
    copying a 1,000-row page field by field was a third of the console's first apply."""
    kind = type(value)
    if kind is str:
        return printable(value)
    if kind in _KEPT:
        return value
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        shown = {printable_row(k): printable_row(v) for k, v in value.items()}
        same = len(shown) == len(value) and all(
            a is b and shown[a] is value[b] for a, b in zip(shown, value, strict=True))
        return value if same else shown
    if isinstance(value, (list, tuple)):
        items = [printable_row(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else type(value)(items)
    if hasattr(kind, "__dataclass_fields__") and not isinstance(value, type):
        # A read model (awa_tui/engine/read/models.py): a copy of the same type, fields escaped.
        changed = {}
        for name in _field_names(cast(Hashable, kind)):
            before = getattr(value, name)
            after = printable_row(before)
            if after is not before:
                changed[name] = after
        return dataclasses.replace(value, **changed) if changed else value
    return value


# Types with no string inside, returned at once (most fields of a row).
_KEPT = frozenset({int, float, bool, type(None), datetime.datetime, datetime.date, datetime.timedelta,
                   decimal.Decimal, uuid.UUID})


@functools.cache
def _field_names(cls: Hashable) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cast(type, cls)))


# --- logging ------------------------------------------------------------------------------


def _sanitise_record(record: logging.LogRecord) -> bool:
    """A logger filter: the message is rendered and escaped once, at the source, so every
    handler (the application's own, or logging's last resort before any is configured)
    writes one escaped line."""
    try:
        message = record.getMessage()
    except (TypeError, ValueError):
        # A malformed call (wrong argument count): left as is for the handler, which
        # reports it through logging's own handleError like any bad record.
        return True
    record.msg, record.args = printable(message), None
    if record.exc_info and not record.exc_text:
        record.exc_text = printable_lines(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = printable_lines(record.stack_info)
    return True


def printable_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)` whose records are escaped before any handler sees them.
    Every logger of awa_tui is made here (tests/security/test_printable.py checks it)."""
    logger = logging.getLogger(name)
    if _sanitise_record not in logger.filters:
        logger.addFilter(_sanitise_record)
    return logger


class PrintableFormatter(logging.Formatter):
    """For handlers the runtime configures itself (`awa-tui run`): the same escaping for
    records of any logger (a library's too), tracebacks kept on their own lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        # The message line is clean already; what follows it is a traceback or stack.
        return printable_lines(super().format(record))
