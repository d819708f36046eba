"""The example app of docs/running-jobs.md, run: its fires, its enqueue in the app's
transaction, its retry policy, exactly as the document shows it (the file is included whole)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
from engine_helpers import at, force

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "running_jobs.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("running_jobs", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_app_runs(dsn: str, conn: Any) -> None:
    app = _example()
    conn.execute(app.SCHEMA)
    client = app.make_client(dsn)
    try:
        client.sync()
        force(conn, "UPDATE awa.cron_jobs SET created_at = %s, last_enqueued_at = %s, next_fire_at = NULL",
              (at("2025-01-01T00:00:00"), at("2025-01-01T00:00:00")))
        client.evaluate(now=at("2025-01-01T00:00:15"))  # the heartbeat fires; the report is not due
        with psycopg.connect(dsn) as app_conn:
            assert app.place_order(client, app_conn, 7) != app.place_order(client, app_conn, 8)
            try:
                with app_conn.transaction():  # the caller's larger transaction fails after the order
                    app.place_order(client, app_conn, 9)
                    raise RuntimeError("payment declined")
            except RuntimeError:
                pass
        assert [r["id"] for r in conn.execute("SELECT id FROM app_orders ORDER BY id")] == [7, 8]
        outcomes = sorted((job.kind, job.source, state) for job, state in client.work_once())
        assert outcomes == [("app.heartbeat", "fired", "completed"), ("app.report", "enqueued", "completed"),
                            ("app.report", "enqueued", "completed")]
        beats = conn.execute("SELECT fired_for FROM app_heartbeats").fetchall()
        assert beats == [{"fired_for": at("2025-01-01T00:00:15")}]
        sections = conn.execute("SELECT section, source FROM app_reports ORDER BY job_id, section").fetchall()
        assert [(r["section"], r["source"]) for r in sections] == [
            ("refunds", "enqueued"), ("sales", "enqueued")] * 2
        bad = client.enqueue("app.report", {"day": "someday"}, queue="reports")
        assert [(job.id, state) for job, state in client.work_once()] == [(bad, "discarded")]  # discard_on
    finally:
        client.close()


def test_the_document_includes_the_example_whole() -> None:
    doc = (ROOT / "docs" / "running-jobs.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.DOTALL)
    assert EXAMPLE.read_text() in blocks
