"""The app both releases run in the rolling deploy test: one per-second schedule that catches
up every instant it missed (so a handover loses none), and its handler."""

from __future__ import annotations

from typing import Any


def setup(client: Any) -> None:
    client.periodic("rolling.tick", "* * * * * *", "rolling.tick", missed_fire_policy="catch_up")
    client.register_handler("rolling.tick", lambda job: None)
