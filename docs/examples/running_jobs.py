"""A complete app on awa-tui's job runner: a periodic async handler writing with an async
driver, a sync report with a timeout and its own retry policy, a one-off job enqueued in the
app's own transaction, and resources registered once. docs/running-jobs.md walks through it;
tests/engine/jobs/test_example_app.py runs it.

Run it: `awa-tui run --app running_jobs:setup --concurrency 8 --queues default,reports=2`
(with this directory on PYTHONPATH), or `python running_jobs.py DSN`.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any

import psycopg

from awa_tui import Client, Job, RetryPolicy


class ReportSourceDown(Exception):
    """Worth retrying: the source comes back."""


class BadReportRequest(Exception):
    """Not worth retrying: the same request fails the same way."""


def setup(client: Client) -> None:
    """Declare the schedules and the handlers (what `awa-tui run --app` calls)."""
    client.periodic("heartbeat", "*/15 * * * * *", "app.heartbeat")
    client.periodic("nightly-report", "0 2 * * *", "app.report", {"day": "yesterday"}, queue="reports")

    @client.handler("app.heartbeat")
    async def heartbeat(job: Job) -> None:
        # An async handler is awaited on the worker's event loop; a job is completed only
        # once this returns.
        async with await psycopg.AsyncConnection.connect(job.resources["dsn"], autocommit=True) as conn:
            await conn.execute("INSERT INTO app_heartbeats (job_id, fired_for) VALUES (%s, %s)",
                               (job.id, job.fire_time))

    @client.handler("app.report", timeout=timedelta(minutes=10),
                    retry=RetryPolicy(backoff="exponential", base=timedelta(seconds=30), jitter=0.2,
                                      retry_on=(ReportSourceDown,), discard_on=(BadReportRequest,)))
    def report(job: Job) -> None:
        # A sync handler runs on one of the worker's threads. It looks at `job.cancelled`
        # between steps: an operator's cancel, or the timeout, stops it there.
        if job.args.get("day") not in ("yesterday", "today"):
            raise BadReportRequest(f"no such day: {job.args.get('day')!r}")
        with psycopg.connect(job.resources["dsn"], autocommit=True) as conn:
            for section in ("sales", "refunds"):
                job.raise_if_cancelled()
                conn.execute("INSERT INTO app_reports (job_id, section, source) VALUES (%s, %s, %s)",
                             (job.id, section, job.source))


def place_order(client: Client, app_conn: psycopg.Connection[Any], order_id: int) -> int:
    """The app's own write and the job that follows it, in one transaction: the job exists
    exactly when the order does (a rollback takes both away)."""
    with app_conn.transaction():
        app_conn.execute("INSERT INTO app_orders (id) VALUES (%s)", (order_id,))
        return client.enqueue("app.report", {"day": "today", "order": order_id}, queue="reports",
                              unique_key=f"order-report:{order_id}", conn=app_conn)


SCHEMA = """
CREATE TABLE IF NOT EXISTS app_heartbeats (job_id bigint PRIMARY KEY, fired_for timestamptz);
CREATE TABLE IF NOT EXISTS app_reports (job_id bigint, section text, source text);
CREATE TABLE IF NOT EXISTS app_orders (id int PRIMARY KEY);
"""


def make_client(dsn: str) -> Client:
    client = Client(dsn, concurrency=8, queues={"default": 8, "reports": 2},
                    shutdown_grace=timedelta(seconds=25), resources={"dsn": dsn})
    setup(client)
    return client


if __name__ == "__main__":
    dsn = sys.argv[1]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
    make_client(dsn).run()  # SIGTERM: running jobs get 25 s, then are released; a second one forces
