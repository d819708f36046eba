"""The console's READ-ONLY detection (write_refusal) under the role layout: an operator
login is offered the actions, a runtime or read-only login is told why it is not."""

from __future__ import annotations

from typing import Any

import pytest
from audit_helpers import Logins
from helpers import until

from awa_tui import Client
from awa_tui.tui import actions
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.launch import console_client, create_app


def _console(dsn: str) -> Any:
    return create_app(ConsoleConfig(client=console_client(dsn, "audit-console", False), refresh=0.5))


def _shown_actions(app: Any) -> set[str]:
    return {binding.action for _, binding, _, _ in app.screen.active_bindings.values() if binding.show}


def _schedules(app: Any) -> list[str]:
    return [row.key.value for row in app.main.panel("schedules").table.ordered_rows]


@pytest.mark.parametrize("key", ["operator", "runtime", "readonly"])
async def test_console_offers_actions_to_an_operator_only(logins: Logins, dsn: str, key: str) -> None:
    with Client(dsn) as admin:
        admin.periodic("nightly", "0 2 * * *", "test.job")
        admin.sync()
    user = logins.users[key]
    reason = {
        "operator": None,
        "runtime": f"role {user} lacks UPDATE on awa.cron_jobs, EXECUTE on awa.begin_action",
        "readonly": f"role {user} lacks UPDATE on awa.cron_jobs, EXECUTE on awa.begin_action",
    }[key]
    mutations = {a.action for a in actions.ACTS if a.mutation}
    app = _console(logins.dsns[key])
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            # The write check runs in the same poll as the schedule list, and is applied first.
            await until(pilot, lambda: "nightly" in _schedules(app), what="the schedules shown")
            assert (app.read_only_reason, app.read_only) == (reason, reason is not None)
            assert bool(_shown_actions(app) & mutations) is (reason is None)
    finally:
        app.client.close()
