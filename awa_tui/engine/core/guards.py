"""Guards every write path shares: the read-only refusal and the operator's label."""

from __future__ import annotations

import unicodedata

from awa_tui.engine.core.errors import ReadOnly, ValidationError


def require_writable(read_only: bool, action: str) -> None:
    if read_only:
        raise ReadOnly(f"{action} refused: this client is read-only")


def check_operator(operator: str) -> str:
    """A label of 1..200 printable characters: audit lines are shown one per row."""
    if (
        not isinstance(operator, str)
        or not operator.strip()
        or len(operator) > 200
        or any(not ch.isprintable() for ch in operator)
    ):
        raise ValidationError(
            f"operator: a label of 1..200 printable characters is required, got {operator!r}"
        )
    return operator.strip()


PAUSE_REASON_MAX = 500


def check_pause_reason(reason: object) -> str | None:
    """S65: why a schedule is paused, one line of 1..500 printable characters (shown beside
    the pause everywhere), or None."""
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip() or len(reason) > PAUSE_REASON_MAX or any(
            not ch.isprintable() for ch in reason):
        raise ValidationError(f"reason: one line of 1..{PAUSE_REASON_MAX} printable characters is required, "
                              f"got {reason!r}"[:300])
    return refuse_format_characters("reason", reason.strip())


def format_characters(text: str) -> list[str]:
    """The invisible format characters in `text` (Unicode category Cf: zero-width spaces
    and joiners, bidi controls, the byte-order mark, soft hyphens ...), as U+XXXX: two names
    that differ only by them look identical in a list or a confirm dialog."""
    return [f"U+{ord(ch):04X}" for ch in text if not ch.isascii() and unicodedata.category(ch) == "Cf"]


def refuse_format_characters(field: str, text: str) -> str:
    """`text`, or a one-line refusal naming the invisible characters (never echoing them)."""
    found = format_characters(text)
    if found:
        raise ValidationError(f"{field}: must not contain invisible format characters "
                              f"(found {', '.join(dict.fromkeys(found))}): two names would look the same")
    return text
