"""One audit entry in full, for the console's audit detail (the list's search is
ledger/trail.py): every column, the writing session included."""

from __future__ import annotations

from typing import Any

import psycopg

from awa_tui.engine.core.errors import NotFound, ValidationError
from awa_tui.engine.read.models import AuditRecord

ENTRY_SQL = """
SELECT id, at, operator, action, target, before, after, detail, db_user, host(client_addr) AS client_addr,
       application_name, backend_pid
FROM awa.audit_log WHERE id = %(id)s
"""


def audit_record(conn: psycopg.Connection[Any], entry_id: int) -> AuditRecord:
    if isinstance(entry_id, bool) or not isinstance(entry_id, int) or entry_id < 1:
        raise ValidationError(f"entry_id: expected a positive integer, got {entry_id!r}")
    row = conn.execute(ENTRY_SQL, {"id": entry_id}).fetchone()
    if row is None:
        raise NotFound(f"no audit entry {entry_id}")
    return AuditRecord(**row)
