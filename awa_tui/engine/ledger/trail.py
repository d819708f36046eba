"""Audit search: by operator, action, target and time span, newest first, paged by id."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.ledger.models import AuditEntry, AuditPage

if TYPE_CHECKING:
    from awa_tui.filters import Filter

MAX_PAGE = 10000

SEARCH_SQL = """
SELECT id, at, operator, action, target, before, after, detail, db_user FROM awa.audit_log a
WHERE (%(operator)s::text IS NULL OR operator = %(operator)s)
  AND (%(action)s::text IS NULL OR action = %(action)s)
  AND (%(target)s::text IS NULL OR target = %(target)s)
  AND (%(since)s::timestamptz IS NULL OR at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR at <= %(until)s)
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
  AND {condition}
ORDER BY id {direction}
LIMIT %(limit)s
"""


def search_audit(
    conn: psycopg.Connection[Any],
    *,
    operator: str | None = None,
    action: str | None = None,
    target: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    before_id: int | None = None,
    where: Filter | None = None,
    now: datetime | None = None,
    oldest: bool = False,
) -> AuditPage:
    """One page of entries, newest first; `next_before_id` fetches the next (older) page.
    `where` is an audit filter (the console's `/`: operator, action, target, since, until,
    matched as the grammar says); `now` anchors its `since:2h` (DB time when None).
    `oldest`: the oldest `limit` entries instead (the end of the list: the console's G),
    still newest first, with no older page."""
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit: expected 1..{MAX_PAGE}, got {limit!r}")
    if since is not None and until is not None and since > until:
        raise ValidationError(f"range: since {since.isoformat()} is after until {until.isoformat()}")
    condition = None
    if where:  # the filter compiler loads for a filter only (`awa-tui audit` has none)
        from awa_tui.engine.filtering.sql import audit_condition

        condition = audit_condition(where, now or db_now(conn))
    sql = SEARCH_SQL.format(condition=condition.sql if condition else "true", direction="ASC" if oldest else "DESC")
    rows = conn.execute(sql, {
        **(condition.params if condition else {}),
        "operator": operator, "action": action, "target": target, "since": since, "until": until,
        "before_id": before_id, "limit": limit + 1,  # one more: is there a next page?
    }).fetchall()
    entries = tuple(AuditEntry(r["id"], r["at"], r["operator"], r["action"], r["target"], r["before"],
                               r["after"], r["detail"], r["db_user"]) for r in rows[:limit])
    if oldest:
        return AuditPage(entries[::-1], None, oldest=True)
    return AuditPage(entries, entries[-1].id if len(rows) > limit else None)
