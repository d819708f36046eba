"""The typed job a handler receives: a fired job's schedule and fire instant as a datetime,
a manual trigger's `triggered_by` (no fire instant, no KeyError), and the resources the app
gave the Client once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engine_helpers import at

from awa_tui import Client, Job


def test_a_fired_job_has_its_schedule_and_fire_instant(dsn: str, conn: Any, register: Any, client: Client) -> None:
    seen: list[Job] = []
    client.register_handler("test.job", seen.append)
    register("tick", "*/5 * * * *", last="2025-01-01T00:00:00")
    client.evaluate(now=at("2025-01-01T00:05:00"))
    client.actions.trigger("tick", operator="ops@test")
    assert [state for _, state in client.work_once()] == ["completed", "completed"]
    fired, manual = sorted(seen, key=lambda job: job.id)
    assert (fired.schedule, fired.fire_time, fired.manual, fired.triggered_by, fired.source) == (
        "tick", datetime(2025, 1, 1, 0, 5, tzinfo=UTC), False, None, "fired")
    assert (manual.schedule, manual.fire_time, manual.manual, manual.triggered_by, manual.source) == (
        "tick", None, True, "ops@test", "manual")
    assert fired.cancelled is False


def test_resources_registered_once_reach_every_handler(dsn: str, conn: Any) -> None:
    settings = {"greeting": "hello"}
    client = Client(dsn, operator="t@test", resources={"settings": settings})
    seen: list[Any] = []

    @client.handler("greet")
    async def greet(job: Job) -> None:
        seen.append(job.resources["settings"])

    try:
        client.enqueue("greet")
        client.enqueue("greet")
        assert [state for _, state in client.work_once()] == ["completed", "completed"]
        assert seen == [settings, settings] and seen[0] is settings
    finally:
        client.close()
