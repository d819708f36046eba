"""The Procrastinate side of the forwarding tests: runs in bench/.venv-procrastinate (the
real package, never beside the product), by its own CLI: `procrastinate --app
procrastinate_tasks.app schema --apply` and `... worker --one-shot`.

`record_fire` writes one row per run: the forwarding tests count them."""

from __future__ import annotations

import json
import os
from typing import Any

import procrastinate
import psycopg

DSN = os.environ["FORWARD_TEST_DSN"]
app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=DSN))


@app.task(name="record_fire", pass_context=True)
def record_fire(context: procrastinate.JobContext, fired_at: str | None = None, **kwargs: Any) -> None:
    assert context.job is not None
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("INSERT INTO forward_runs (procrastinate_job_id, fired_at, kwargs) VALUES (%s, %s, %s)",
                     (context.job.id, fired_at, json.dumps(kwargs)))
