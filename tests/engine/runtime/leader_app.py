"""The app a leader subprocess runs in the crash tests (`awa-tui run --app leader_app:setup`)."""

from __future__ import annotations

from typing import Any

CATCH_UP_SCHEDULES = [f"replay-{n:02d}" for n in range(10)]


def setup(client: Any) -> None:
    for name in CATCH_UP_SCHEDULES:
        client.periodic(name, "* * * * * *", "test.replay", missed_fire_policy="catch_up")
