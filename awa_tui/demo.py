"""A small built-in schedule set for `awa-tui run --demo` and `awa-tui --lead --demo`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from awa_tui.engine.client import Client
    from awa_tui.engine.jobs.context import Job

from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.demo")


def _handle(job: Job) -> None:
    log.info("handled job %s (%s) args=%s", job.id, job.kind, job.args)


def _flaky(job: Job) -> None:
    if job.attempt < 2:
        raise RuntimeError("demo failure on the first attempt")
    _handle(job)


def setup(client: Client) -> None:
    """Register the demo schedules and their handlers."""
    client.periodic("demo.heartbeat", "*/10 * * * * *", "demo.heartbeat", {"source": "demo"})
    client.periodic("demo.minutely-report", "* * * * *", "demo.report", {"report": "minutely"}, queue="reports")
    client.periodic(
        "demo.nightly-billing", "30 2 * * *", "demo.billing", {"run": "nightly"},
        timezone="America/New_York", queue="billing", missed_fire_policy="catch_up",
    )
    client.periodic("demo.hourly-cleanup", "@hourly", "demo.cleanup", tags=["maintenance"], priority=3)
    client.periodic(
        "demo.quarter-minute-sync", "*/15 * * * * *", "demo.flaky", {"target": "crm"},
        queue="integrations", missed_fire_policy="catch_up", max_attempts=3,
    )
    for kind in ("demo.heartbeat", "demo.report", "demo.billing", "demo.cleanup"):
        client.register_handler(kind, _handle)
    client.register_handler("demo.flaky", _flaky)
