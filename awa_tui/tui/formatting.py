"""How values look on screen: times, durations, states. Pure functions (Rich text), no Textual."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.text import Text

from awa_tui.engine.core.db import redact
from awa_tui.engine.core.standby import ServerRole
from awa_tui.engine.read.models import AnySchedule
from awa_tui.instants import span_precise
from awa_tui.printable import printable

__all__ = ["span_precise"]  # the console reads durations from here; the CLI from awa_tui.instants


def clip(text: str, width: int) -> str:
    """Cut `text` to `width` cells with an ellipsis (fixed-width columns: auto widths make snapshots flaky)."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def span(seconds: float) -> str:
    """A compact duration: 45s, 12m, 3h, 2d (the largest unit, floored)."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    if seconds < 86400 * 2:
        return f"{int(seconds // 3600)}h"
    return f"{int(seconds // 86400)}d"


def relative(at: datetime | None, now: datetime) -> str:
    """'in 4m12s' / '3m ago' relative to `now` (DB time or the injected clock)."""
    if at is None:
        return "-"
    delta = (at - now).total_seconds()
    if abs(delta) < 1:
        return "now"
    return f"in {span_precise(delta)}" if delta > 0 else f"{span(delta)} ago"


def utc(at: datetime | None, *, date: bool = True) -> str:
    """Absolute UTC time, 'Z' suffixed so nobody mistakes it for local time."""
    if at is None:
        return "-"
    at = at.astimezone(UTC)
    return at.strftime("%Y-%m-%d %H:%M:%SZ" if date else "%H:%M:%SZ")


def short_utc(at: datetime | None) -> str:
    """'03-08 12:05:00' for table cells (the header says UTC)."""
    if at is None:
        return "-"
    return at.astimezone(UTC).strftime("%m-%d %H:%M:%S")


def lateness(value: timedelta | None) -> str:
    if value is None:
        return "-"
    seconds = value.total_seconds()
    if seconds < 0.001:
        return "0s"
    if seconds < 10:
        return f"{seconds:.1f}s"
    return span(seconds)


def compact_json(value: Any, width: int | None = None) -> str:
    text = json.dumps(value, default=str, separators=(", ", ": "), sort_keys=True)
    return clip(text, width) if width else text


def pretty_json(value: Any) -> str:
    return json.dumps(value, default=str, indent=2, sort_keys=True)


# A schedule's state, written the same way in the table, the summary, the detail screen
# and an operation's refusal: the word, who set it and when.
STATE_WORDS = {"paused": "PAUSED", "retired": "RETIRED"}


FINISHED = "FINISHED"  # past end_at or max_fires: nothing more fires; not broken, not late


def state_word(state: str) -> str:
    return STATE_WORDS.get(state, FINISHED if state == "finished" else "active")


def state_by(row: AnySchedule) -> tuple[str | None, datetime | None]:
    """Who paused or retired it, and when (the retirement when it is retired)."""
    if row.state == "retired":
        return row.retired_by, row.retired_at
    return row.paused_by, row.paused_at


def state_text(row: AnySchedule, now: datetime, style: str = "bold") -> Text:
    """'PAUSED by ops since 2026-03-08 12:00:00Z (3m ago)', 'RETIRED by ops at ... (...)' or 'active';
    a pause with an end and a reason (S65): 'PAUSED until 14:00:00Z (in 2h) by alice since ...: db migration'."""
    word = state_word(row.state)
    if row.state == "finished" and row.finished_at is not None:
        return Text(word, style=style).append(f" at {utc(row.finished_at)} ({relative(row.finished_at, now)})")
    if row.state not in STATE_WORDS:
        return Text(word)
    by, at = state_by(row)
    text = Text(word, style=style)
    paused = row.state == "paused"
    if paused and row.paused_until is not None:
        text.append(f" until {utc(row.paused_until)} ({relative(row.paused_until, now)})")
    text.append(f" by {by} {'since' if paused else 'at'} {utc(at)} ({relative(at, now)})")
    if paused and row.pause_reason:
        text.append(f": {row.pause_reason}")
    return text


# A due instant as one character of an outcome strip, readable without colour: the state
# of the job fired (or backfilled) for it, else its verdict (ledger/models.instant_outcome).
OUTCOME_GLYPHS = {
    "completed": ".", "discarded": "x", "retryable": "r", "running": ">", "available": "w", "cancelled": "c",
    "skipped_paused": "-", "skipped_retired": "-", "skipped_overlap": "-", "skipped_excluded": "-",
    "skipped_too_old": "-",
    "no_leader": "?",
    "coalesced": "~", "pending": "_", "unknown": "#",
}
UNKNOWN_GLYPH = "!"  # a job state the console does not know (a hand-written row)
# The legend, a character and its meaning each (the help, docs/keys.md, the summary line).
OUTCOME_MEANINGS = (
    (".", "ok"), ("x", "failed"), ("r", "retrying"), (">", "running"), ("w", "waiting"), ("c", "cancelled"),
    ("-", "skipped (paused, retired, overlap, excluded, too old)"), ("?", "no leader"),
    ("~", "coalesced into a later fire"),
    ("_", "not fired yet"), ("#", "unknown (no history left)"),
    (UNKNOWN_GLYPH, "a job state not known"),
)
OUTCOME_LEGEND = "  ".join(f"{glyph} {meaning}" for glyph, meaning in OUTCOME_MEANINGS)
RESULT_STYLES = {"failed": "bold red", "running": "cyan", "waiting": "yellow"}


def outcome_strip(outcomes: tuple[str, ...]) -> str:
    """The last due instants' outcomes, oldest first, one character each."""
    return "".join(OUTCOME_GLYPHS.get(s, UNKNOWN_GLYPH) for s in outcomes)


def strip_legend(strip: str) -> str:
    """The legend of the characters a strip holds, in the legend's order."""
    return "  ".join(f"{glyph} {meaning}" for glyph, meaning in OUTCOME_MEANINGS if glyph in strip)


def result_text(result: str) -> Text:
    """A last result as a word: FAILED in capitals (a word, not a colour alone)."""
    word = "FAILED" if result == "failed" else result
    return Text(word, style=RESULT_STYLES.get(result, ""), no_wrap=True, overflow="ellipsis", end="")


def seconds_text(seconds: float | None) -> str:
    """A duration held as seconds (a job's lateness or run time), like `lateness`."""
    return "-" if seconds is None else lateness(timedelta(seconds=seconds))


def size_text(count: int) -> str:
    """Bytes as an operator reads them: 0 B, 812 B, 4.2 kB, 17.0 MB."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"


def standby_text(role: ServerRole | None) -> str | None:
    """What the status bar says beside STANDBY: the server and how far behind it is. The age
    of the newest replayed change also grows while the primary is idle, so with nothing
    left to replay the bar says "caught up" and gives that age as what it is."""
    if role is None or not role.standby:
        return None
    if role.replay_lag_s is None:
        lag = "nothing replayed yet"
    else:  # tenths while small: a healthy standby is well under a second behind a busy primary
        seconds = max(role.replay_lag_s, 0.0)
        age = f"{seconds:.1f}s" if seconds < 60 else span_precise(seconds)
        if role.behind_bytes == 0:
            return f"{role.where} · caught up · newest change {age} old"
        lag = f"replay lag {age}"
    behind = "" if role.behind_bytes is None else f", {size_text(role.behind_bytes)} to replay"
    return f"{role.where} · {lag}{behind}"


# --- the raw view (`y`): a read model in full, as YAML-like lines ------------------------

# A field named like one of these holds a secret: shown as hidden, never its value (a URL
# too: a webhook's path and query are often the secret, user:password@ always is).
_SECRET_WORDS = ("password", "secret", "token", "api_key", "routing_key", "key_ref", "hmac", "dsn", "url")
HIDDEN = "(hidden)"


def _secret(name: str) -> bool:
    name = name.lower()
    return any(word in name for word in _SECRET_WORDS)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}s"
    if value == "":
        return '""'
    # Strings from the database are data: any DSN password quoted in them goes, then every
    # control byte is shown escaped (one line each).
    return printable(redact(value if isinstance(value, str) else str(value)))


def _fields(value: Any) -> list[tuple[str, Any]] | None:
    """A read model's or a JSON object's (name, value) pairs in order; None for anything else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return list(dataclasses.asdict(value).items())  # fields in order, nested models as dicts
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    return None


def _raw(name: str, value: Any, indent: str, out: list[str]) -> None:
    key = printable(name)
    if value is not None and _secret(name):
        out.append(f"{indent}{key}: {HIDDEN}")
        return
    pairs = _fields(value)
    if pairs is not None:
        if not pairs:
            out.append(f"{indent}{key}: {{}}")
            return
        out.append(f"{indent}{key}:")
        for child, inner in pairs:
            _raw(child, inner, indent + "  ", out)
        return
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if not items:
            out.append(f"{indent}{key}: []")
            return
        out.append(f"{indent}{key}:")
        for item in items:
            _item(item, indent + "  ", out)
        return
    out.append(f"{indent}{key}: {_scalar(value)}")


def _item(value: Any, indent: str, out: list[str]) -> None:
    """One list item: `- value`, or `- ` before the first line of a nested object."""
    nested: list[str] = []
    pairs = _fields(value)
    if pairs:
        for child, inner in pairs:
            _raw(child, inner, indent + "  ", nested)
        out.append(f"{indent}- {nested[0].removeprefix(indent + '  ')}")
        out.extend(nested[1:])
    elif isinstance(value, (list, tuple)) and value:
        out.append(f"{indent}-")
        for inner in value:
            _item(inner, indent + "  ", out)
    elif pairs == []:
        out.append(f"{indent}- {{}}")
    elif isinstance(value, (list, tuple)):
        out.append(f"{indent}- []")
    else:
        out.append(f"{indent}- {_scalar(value)}")


def raw_lines(model: Any) -> list[str]:
    """The raw view of one row (`y`): every field of its read model (a frozen dataclass,
    upstream Awa's too) as `name: value`, nested values indented two spaces, lists as
    `- item`; times in UTC ISO, None as null. Strings are escaped (printable), DSN
    passwords redacted, fields that hold a secret (a URL, a key, a password) hidden."""
    out: list[str] = []
    pairs = _fields(model)
    if pairs is None:
        return [_scalar(model)]
    for name, value in pairs:
        _raw(name, value, "", out)
    return out
