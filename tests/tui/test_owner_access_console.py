"""S76: the console as a team's login shows its owners' schedules and owners only (the
database hides the rest) and offers the actions such a role may take; the owners panel says
which team roles may act on each owner."""

from __future__ import annotations

import uuid
from typing import Any

from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from tui_helpers import ready, settled, table_keys

from awa_tui.engine.actions import grants


async def test_a_team_login_sees_its_owners_schedules_only(console_factory: Any, seeded: str, conn: Any) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    role, user = f"{prefix}billing_team", f"{prefix}billing_login"
    # The oracle: the superuser's rows of billing (never subject to row-level security).
    billing = [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs WHERE owner = 'billing' ORDER BY name")]
    everyone = [r["name"] for r in conn.execute("SELECT name FROM awa.cron_jobs ORDER BY name")]
    assert billing and len(billing) < len(everyone)
    try:
        grants.apply_owner_role(seeded, grants.owner_role(role, ["billing"]))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'team-pw' IN ROLE {}").format(
            sql.Identifier(user), sql.Identifier(role)))
        team_dsn = make_conninfo(**{**conninfo_to_dict(seeded), "user": user, "password": "team-pw"})
        app = console_factory(dsn=team_dsn)
        async with app.run_test(size=(120, 36)) as pilot:
            await ready(pilot, app)
            assert sorted(table_keys(app)) == billing
            assert not app.freshness.read_only  # it may act on its own schedules
            await pilot.press("2")
            await settled(pilot, app)
            assert table_keys(app, "owners") == ["billing"]
            owners = app.main.panel("owners")
            assert owners.table.get_cell("billing", "roles").plain == role  # who may act on billing
            assert str(owners.query_one("#owners-summary").render()).endswith(f" · team roles: {role}")
        app_all = console_factory()
        async with app_all.run_test(size=(120, 36)) as pilot:  # control: the operator's console
            await ready(pilot, app_all)
            assert sorted(table_keys(app_all)) == everyone
            await pilot.press("2")
            await settled(pilot, app_all)
            table = app_all.main.panel("owners").table
            assert {key: table.get_cell(key, "roles").plain for key in table_keys(app_all, "owners")} == {
                owner: role if owner == "billing" else "-" for owner in table_keys(app_all, "owners")}
    finally:
        for name in (user, role):
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (name,))
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))
