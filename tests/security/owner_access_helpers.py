"""One database, many teams: two owners' schedules (billing, payroll) with jobs and audit
entries, a team role for billing, the role layout, and one login each.

Roles are cluster-wide: every name carries a fresh prefix, and every role is dropped at
the end (after its privileges and policies are dropped)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from helpers import drop_roles
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from awa_tui import Client
from awa_tui.engine.actions import grants

PASSWORD = "team-pw"
BILLING = ("billing-report", "invoice")  # billing's schedules, in name order
PAYROLL = ("payroll-run",)


@dataclass
class Teams:
    prefix: str
    team_role: str  # billing's team role (payroll's is <prefix>payroll_team)
    dsns: dict[str, str]  # billing (a login of the team role), operator, runtime, readonly
    users: dict[str, str]

    def connect(self, key: str) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsns[key], autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def _login(admin: psycopg.Connection[Any], base: dict[str, Any], user: str, role: str) -> str:
    admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
        sql.Identifier(user), sql.Literal(PASSWORD), sql.Identifier(role)))
    return make_conninfo(**{**base, "user": user, "password": PASSWORD})


def seed(dsn: str) -> None:
    """billing's two schedules and payroll's one, each triggered once and paused once
    (a job and audit entries per schedule), by a superuser."""
    for owner, names in (("billing", BILLING), ("payroll", PAYROLL)):
        with Client(dsn, owner=owner, authoritative=True) as runtime:
            for name in names:
                runtime.periodic(name, "0 3 * * *", f"{owner}.job")
            runtime.sync()
    with Client(dsn, operator="admin@ops") as admin:
        for name in (*BILLING, *PAYROLL):
            admin.actions.trigger(name)
            admin.actions.pause(name)
    with psycopg.connect(dsn, autocommit=True) as conn:  # a runtime of each owner, and one of none
        conn.execute("INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, "
                     "last_seen_at, owner, manifest) SELECT gen_random_uuid(), 'host', 1, 'x', now(), now(), o, "
                     "CASE WHEN o IS NULL THEN NULL ELSE jsonb_build_object('owner', o) END "
                     "FROM unnest(ARRAY['billing', 'payroll', NULL]) o")


def teams(dsn: str, admin: psycopg.Connection[Any]) -> Iterator[Teams]:
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    layout = grants.role_layout(prefix)
    team_role = f"{prefix}billing_team"
    try:
        grants.apply_layout(dsn, layout)
        grants.apply_owner_role(dsn, grants.owner_role(team_role, ["billing"]))
        # Another team's role (no login): its grant is not billing's to see.
        grants.apply_owner_role(dsn, grants.owner_role(f"{prefix}payroll_team", ["payroll"]))
        base = conninfo_to_dict(admin.info.dsn)
        users = {key: f"{prefix}{key}_login" for key in ("billing", "operator", "runtime", "readonly")}
        roles = {"billing": team_role, "operator": layout.operator, "runtime": layout.runtime,
                 "readonly": layout.readonly}
        dsns = {key: _login(admin, base, users[key], roles[key]) for key in users}
        yield Teams(prefix, team_role, dsns, users)
    finally:
        drop_roles(admin, prefix)
