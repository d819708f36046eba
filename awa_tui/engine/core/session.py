"""What every engine object that talks to the database on someone's behalf shares: a pool
of connections, the read-only refusal and the operator's label. The Client, its reads, its
operator actions and its runtime each hold one."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from awa_tui.engine.core import guards, scope
from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.errors import AwaError, ReadOnly

_T = TypeVar("_T")


class Room:
    """A room's module, imported at its first use: `views.get_schedule` reads as the module
    it names, and `awa-tui cron show` loads the views it reads, never the evaluator, the
    runtime or the ledger (tests/cli/test_cli_lazy.py)."""

    __slots__ = ("_path",)

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self._path), name)


class Session:
    """A pooled connection per call, refused writes on a read-only session, and the
    operator label an action is audited with."""

    def __init__(self, db: ConnectionSource, *, read_only: bool, operator: str) -> None:
        self.db = db
        self.read_only = read_only
        self.operator = operator

    def _read(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """A function of a room (its first parameter the connection), on a pooled one."""
        with self.db.connection() as conn:
            return fn(conn, *args, **kwargs)

    def _checked(self, action: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """`fn` once the session may write; a dry run (`dry_run=True`) writes nothing, so it
        runs on a read-only session too."""
        if not kwargs.get("dry_run"):
            guards.require_writable(self.read_only, action)
        return fn(*args, **kwargs)

    def _write(self, action: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """`_checked` on a pooled connection."""
        return self._checked(action, self._read, fn, *args, **kwargs)

    def _op(self, action: str, fn: Callable[..., Any], *args: Any, operator: str | None = None,
            model: Callable[..., _T] | None = None, **kwargs: Any) -> Any:
        """An operator action, labelled with `operator` (this session's when omitted): the
        room's function takes it after its own arguments. `model` turns the row the room
        wrote (engine-internal) into the typed result of read/results.py."""
        try:
            done = self._write(action, fn, *args, self.operator if operator is None else operator, **kwargs)
        except ReadOnly as refused:  # a team's role (S76) is told what it may do instead
            try:
                worded = self._read(scope.team_refusal, action, refused)
            except AwaError:  # the database went away meanwhile: the refusal as it came
                raise refused from None
            raise worded from None
        return done if model is None else model(**done)
