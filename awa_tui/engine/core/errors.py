"""Errors users can read: each carries a one-line message, safe to print as is."""

from __future__ import annotations


class AwaError(Exception):
    """Base of every error the engine raises on purpose."""

    def __init__(self, message: str) -> None:
        # One line, always: callers print it without a traceback.
        super().__init__(" ".join(str(message).split()))

    @property
    def message(self) -> str:
        return str(self)


class ValidationError(AwaError, ValueError):
    """A schedule definition or an argument is invalid (S1, S2)."""


class NotFound(AwaError, LookupError):
    """A named schedule, queue, owner or runtime does not exist."""


class Conflict(AwaError):
    """The action cannot be done in the current state (retired target, foreign owner...)."""


class NameTaken(Conflict):
    """A schedule name made at run time is already taken: by another schedule made at run
    time, by another owner, or by a schedule declared in code (S64). Its message starts
    with the field it is about."""

    field = "name"


class DeclaredInCode(Conflict):
    """A change made at run time (edit, delete) aimed at a schedule declared in code,
    which only a deploy or an operator override changes (S64)."""

    field = "name"


class ReadOnly(AwaError):
    """A mutation was attempted by a read-only client or role."""


class DatabaseUnavailable(AwaError):
    """The database cannot be reached or refused the connection."""


class SchemaError(AwaError):
    """The database schema is missing, or newer than this code (S4)."""


def short_repr(value: object, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters, for quoting a bad value in a one-line error."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a 5000-digit int, a 10k-deep dict: no repr
        text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
