"""The application a deployment test runs (`--app probe_app:setup`): one schedule and its
handler, as a team's module would register them."""

from __future__ import annotations

from typing import Any


def setup(client: Any) -> None:
    client.periodic("deploy.nightly", "0 3 * * *", "deploy.job")
    client.register_handler("deploy.job", lambda job: None)
