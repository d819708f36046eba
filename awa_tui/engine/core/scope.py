"""A team's role (S76, v032) finds only its owners' rows: when it looks for a schedule or an
owner that is not there for it, the refusal says so, in one line, instead of "unknown"."""

from __future__ import annotations

from typing import Any

import psycopg

from awa_tui.engine.core.errors import AwaError, NotFound, ReadOnly
from awa_tui.printable import printable


def owner_scope(conn: psycopg.Connection[Any]) -> list[str] | None:
    """The owners this session's role may act on; None when it is not a team's role."""
    row = conn.execute("SELECT awa.owner_scope() AS scope").fetchone()
    return None if row is None or row["scope"] is None else list(row["scope"])


def _only(scope: list[str]) -> str:
    return f"it may act on the schedules of {', '.join(printable(o) for o in scope)} only"


def unseen_schedule(conn: psycopg.Connection[Any], name: str) -> NotFound:
    """The refusal for a schedule this session found no row of."""
    scope = owner_scope(conn)
    if scope is None:
        return NotFound(f"unknown schedule {name!r}")
    return NotFound(f"schedule {name!r}: not one your role may see ({_only(scope)})")


def unseen_job(conn: psycopg.Connection[Any], job_id: int) -> NotFound:
    """The refusal for a job this session found no row of."""
    scope = owner_scope(conn)
    if scope is None:
        return NotFound(f"unknown job {job_id}")
    return NotFound(f"job {job_id}: not one your role may see ({_only(scope)})")


def unseen_owner(conn: psycopg.Connection[Any], owner: str) -> NotFound:
    """The refusal for an owner this session found no schedule of."""
    scope = owner_scope(conn)
    if scope is None or owner in scope:
        return NotFound(f"owner {owner!r} has no schedules")
    return NotFound(f"owner {owner!r}: not one your role may act on ({_only(scope)})")


TEAM_MAY = ("a team's role may pause, resume, trigger, override and backfill its owners' schedules "
            "and retry or cancel their jobs")


def team_refusal(conn: psycopg.Connection[Any], action: str, refused: AwaError) -> AwaError:
    """`refused` (a privilege the database denied) in the operator's words when this
    session is a team's role: what such a role may do, and that `action` is not of it."""
    if not str(refused).startswith("permission denied: permission denied"):
        return refused
    try:
        scope = owner_scope(conn)
    except psycopg.Error:  # upstream's schema: no team roles
        return refused
    return refused if scope is None else ReadOnly(f"permission denied: {TEAM_MAY}, not {action}")
