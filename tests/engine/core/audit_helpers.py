"""The role layout applied to a test's own database, with one login per role.

Roles are cluster-wide: every name carries a fresh prefix, and every role is dropped at
the end (after its objects are handed back and its privileges dropped)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from helpers import drop_roles as drop_layout
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from awa_tui.engine.actions import grants

PASSWORD = "audit-pw"


@dataclass
class Logins:
    layout: grants.RoleLayout
    users: dict[str, str]  # role key (runtime, operator, readonly, owner) -> login name
    dsns: dict[str, str]

    def connect(self, key: str, application_name: str = "audit-test") -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsns[key], autocommit=True, row_factory=dict_row,  # type: ignore[arg-type]
                               application_name=application_name)


def unique_prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}_"


def audit_rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    return conn.execute("SELECT * FROM awa.audit_log ORDER BY id").fetchall()


def logins_for(admin: psycopg.Connection[Any], layout: grants.RoleLayout) -> Logins:
    """One LOGIN member of each role of an applied layout."""
    users, dsns = {}, {}
    base = conninfo_to_dict(admin.info.dsn)
    for key, role in (("owner", layout.owner), ("runtime", layout.runtime), ("operator", layout.operator),
                      ("readonly", layout.readonly)):
        user = f"{layout.prefix}{key}_login"
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
            sql.Identifier(user), sql.Literal(PASSWORD), sql.Identifier(role)))
        users[key] = user
        dsns[key] = make_conninfo(**{**base, "user": user, "password": PASSWORD})
    return Logins(layout, users, dsns)


def applied_layout(dsn: str, admin: psycopg.Connection[Any]) -> Iterator[Logins]:
    layout = grants.role_layout(unique_prefix())
    try:
        grants.apply_layout(dsn, layout)
        yield logins_for(admin, layout)
    finally:
        drop_layout(admin, layout.prefix)
