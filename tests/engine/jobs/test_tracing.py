"""OpenTelemetry spans of fires and jobs (the `otel` extra): a fired job's attempts share the
trace every process derives from the fire's identity, an enqueued job continues its
enqueuer's trace, a failure is recorded, and without a tracer provider nothing is emitted.

Each test hands its own TracerProvider to the Client (the global one is never set, so nothing
leaks across tests) and reads the spans back from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import at, force
from helpers import wait_for
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from awa_tui import Client, Job
from awa_tui.engine.jobs import tracing
from awa_tui.engine.jobs.tracing import fire_ids

ROOT = Path(__file__).resolve().parents[3]


class Traced:
    """A tracer provider of the test's own and what it exported."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]


@pytest.fixture
def traced() -> Iterator[Traced]:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # no global provider, ever
    spans = Traced()
    yield spans
    spans.provider.shutdown()


@pytest.fixture
def client(dsn: str, traced: Traced) -> Iterator[Client]:
    """The leader and worker of these tests, tracing to `traced` (the `register` fixture's client)."""
    c = Client(dsn, operator="tester@test", tracer_provider=traced.provider)
    yield c
    c.close()


def expected_fire(name: str, instant: str) -> tuple[int, int]:
    """The oracle: trace id and parent span id of a fire, as docs/running-jobs.md writes them."""
    digest = hashlib.sha256(f"awa.fire\n{name}\n{instant}".encode()).digest()
    return int.from_bytes(digest[:16], "big"), int.from_bytes(digest[16:24], "big")


def job_metadata(conn: Any, job_id: int) -> dict[str, Any]:
    return conn.execute("SELECT metadata FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()["metadata"]


def test_a_fired_jobs_span_and_its_fire_share_the_trace_derived_from_the_fire(
        client: Client, traced: Traced, dsn: str, register: Any) -> None:
    """The leader (this client) fires; another runtime with a provider of its own runs the
    job: each derives the same trace from the schedule's name and the fire's instant."""
    register("nightly", "* * * * *", last="2025-01-01T00:00:00", queue="reports")
    (fired,) = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    trace_id, fire_span_id = expected_fire("nightly", "2025-01-01T00:01:00Z")
    assert (trace_id, fire_span_id) == (0x08E33CC2266C8FE70B48E6B25EEABF62, 0x6179A99357DBD0F7)

    (fire,) = traced.spans()
    assert (fire.name, fire.kind, fire.context.trace_id, fire.parent.span_id) == (
        "fire", SpanKind.PRODUCER, trace_id, fire_span_id)
    assert dict(fire.attributes) == {
        "messaging.system": "awa", "messaging.operation.type": "create", "messaging.operation.name": "fire",
        "messaging.message.id": str(fired.id), "awa.schedule.name": "nightly",
        "awa.fire.instant": "2025-01-01T00:01:00Z"}

    other = Traced()
    worker = Client(dsn, operator="tester@test", tracer_provider=other.provider)
    seen: list[trace.SpanContext] = []
    worker.register_handler("test.job", lambda job: seen.append(trace.get_current_span().get_span_context()))
    try:
        assert [(job.id, state) for job, state in worker.work_once()] == [(fired.id, "completed")]
    finally:
        worker.close()
    (span,) = other.spans()
    assert (span.name, span.kind, span.context.trace_id, span.parent.span_id, span.parent.is_remote) == (
        "process reports", SpanKind.CONSUMER, trace_id, fire_span_id, True)
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [(trace_id, fire_span_id)]
    assert dict(span.attributes) == {
        "messaging.system": "awa", "messaging.operation.type": "process", "messaging.operation.name": "process",
        "messaging.destination.name": "reports", "messaging.message.id": str(fired.id),
        "awa.job.kind": "test.job", "awa.job.attempt": 1, "awa.schedule.name": "nightly",
        "awa.fire.instant": "2025-01-01T00:01:00Z", "awa.job.outcome": "completed"}
    assert (span.status.status_code, span.events) == (StatusCode.UNSET, ())
    assert seen == [span.context]  # the handler ran inside its job's span
    assert traced.spans() == [fire]  # the leader's provider got the fire only


def test_a_pass_emits_at_most_its_limit_of_fire_spans_and_every_job_keeps_its_fires_trace(
        client: Client, traced: Traced, register: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass of many fires spends a bounded time on spans (FIRE_SPANS, 1000; 2 here): the
    first fires get theirs, and every job's span is still in its own fire's trace."""
    monkeypatch.setattr(tracing, "FIRE_SPANS", 2)
    for name in ("a", "b", "c"):
        register(name, "* * * * *", last="2025-01-01T00:00:00")
    fired = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    assert sorted(job.name for job in fired) == ["a", "b", "c"]
    assert [span.attributes["awa.schedule.name"] for span in traced.spans("fire")] == [job.name for job in fired[:2]]
    client.register_handler("test.job", lambda job: None)
    assert [state for _, state in client.work_once()] == ["completed"] * 3
    assert {span.attributes["awa.schedule.name"]: span.context.trace_id for span in traced.spans("process default")} \
        == {name: expected_fire(name, "2025-01-01T00:01:00Z")[0] for name in ("a", "b", "c")}


def test_the_fire_identity_reads_every_form_an_instant_is_stored_in() -> None:
    """Upstream Awa writes '2026-11-30 22:33:28+00', this engine '2026-11-30T22:33:28Z': one fire."""
    expected = expected_fire("billing", "2026-11-30T22:33:28Z")
    assert fire_ids("billing", "2026-11-30T22:33:28Z") == expected
    assert fire_ids("billing", "2026-11-30 22:33:28+00") == expected
    assert fire_ids("billing", "2026-11-30T23:33:28+01:00") == expected
    assert fire_ids("billing", "2026-11-30T22:33:28.5Z") == expected_fire("billing", "2026-11-30T22:33:28.500000Z")
    assert fire_ids("billing", "2026-11-30T22:33:29Z") != expected  # another instant, another trace
    assert fire_ids("billing", "yesterday") is None
    assert fire_ids("billing", "2026-11-30T22:33:28") is None  # no zone: no one instant


def test_a_failing_handler_records_its_exception_and_status_error(client: Client, traced: Traced) -> None:
    def boom(job: Job) -> None:
        raise ValueError(f"boom {job.args['n']}")

    client.register_handler("fails", boom)
    final = client.enqueue("fails", {"n": 1}, max_attempts=1)
    again = client.enqueue("fails", {"n": 2}, max_attempts=3)
    assert [(job.id, state) for job, state in client.work_once()] == [(final, "discarded"), (again, "retryable")]
    by_id = {span.attributes["messaging.message.id"]: span for span in traced.spans()}
    assert set(by_id) == {str(final), str(again)}
    for job_id, n, outcome in ((final, 1, "failed"), (again, 2, "retry")):
        span = by_id[str(job_id)]
        assert dict(span.attributes) == {
            "messaging.system": "awa", "messaging.operation.type": "process", "messaging.operation.name": "process",
            "messaging.destination.name": "default", "messaging.message.id": str(job_id), "awa.job.kind": "fails",
            "awa.job.attempt": 1, "awa.job.outcome": outcome, "error.type": "ValueError"}
        assert (span.status.status_code, span.status.description) == (StatusCode.ERROR, f"ValueError: boom {n}")
        (event,) = span.events
        assert (event.name, event.attributes["exception.type"], event.attributes["exception.message"]) == (
            "exception", "ValueError", f"boom {n}")
        assert 'raise ValueError(f"boom {job.args' in event.attributes["exception.stacktrace"]
        assert span.parent is None  # enqueued outside any span: a trace of its own


def test_an_enqueued_job_continues_the_trace_it_was_enqueued_in(
        client: Client, traced: Traced, conn: Any) -> None:
    seen: list[trace.SpanContext] = []

    async def handler(job: Job) -> None:
        await asyncio.sleep(0)
        seen.append(trace.get_current_span().get_span_context())

    client.register_handler("mail.send", handler)
    with traced.provider.get_tracer("app").start_as_current_span("signup") as request:
        job_id = client.enqueue("mail.send", {"to": "a@example.com"}, queue="mail")
    origin = request.get_span_context()
    assert job_metadata(conn, job_id) == {
        "enqueued": True,
        "traceparent": f"00-{origin.trace_id:032x}-{origin.span_id:016x}-{origin.trace_flags:02x}"}
    assert [state for _, state in client.work_once()] == ["completed"]
    (span,) = traced.spans("process mail")
    assert (span.context.trace_id, span.parent.span_id) == (origin.trace_id, origin.span_id)
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (origin.trace_id, origin.span_id)]
    assert "awa.schedule.name" not in span.attributes and span.attributes["awa.job.outcome"] == "completed"
    assert seen == [span.context]  # an async handler runs inside its job's span too


def test_a_traceparent_of_the_callers_own_is_kept_as_given(client: Client, traced: Traced, conn: Any) -> None:
    given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with traced.provider.get_tracer("app").start_as_current_span("signup"):
        job_id = client.enqueue("mail.send", metadata={"traceparent": given})
    assert job_metadata(conn, job_id) == {"enqueued": True, "traceparent": given}


def test_negative_control_without_its_traceparent_the_job_starts_a_new_trace(
        client: Client, traced: Traced, conn: Any) -> None:
    """The control of the test above: the link is the metadata, not the worker's own context
    (the worker runs here inside a span of the test's, which the job must not join either)."""
    client.register_handler("mail.send", lambda job: None)
    tracer = traced.provider.get_tracer("app")
    with tracer.start_as_current_span("signup") as request:
        job_id = client.enqueue("mail.send")
    force(conn, "UPDATE awa.jobs SET metadata = metadata - 'traceparent' WHERE id = %s", (job_id,))
    with tracer.start_as_current_span("test-driver") as driver:
        assert [state for _, state in client.work_once()] == ["completed"]
    (span,) = traced.spans("process default")
    assert span.parent is None and span.links == ()
    assert span.context.trace_id not in (request.get_span_context().trace_id, driver.get_span_context().trace_id)


def test_a_running_runtime_traces_the_jobs_its_worker_loop_runs(client: Client, traced: Traced) -> None:
    client.register_handler("mail.send", lambda job: None)
    with traced.provider.get_tracer("app").start_as_current_span("signup") as request:
        job_id = client.enqueue("mail.send")
    client.start(lead=False)
    (span,) = wait_for(lambda: traced.spans("process default"), what="the job's span")
    assert (span.attributes["messaging.message.id"], span.attributes["awa.job.outcome"]) == (str(job_id), "completed")
    assert span.context.trace_id == request.get_span_context().trace_id


def test_without_a_tracer_provider_nothing_is_emitted_and_jobs_run_as_before(
        dsn: str, traced: Traced, conn: Any, register: Any) -> None:
    """`traced` here is a provider the Client is not given (and no global one is set)."""
    plain = Client(dsn, operator="tester@test")
    try:
        ran: list[int] = []
        plain.register_handler("test.job", lambda job: ran.append(job.id))
        plain.periodic("nightly", "* * * * *", "test.job")
        plain.sync()
        force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, next_fire_at = NULL WHERE name = 'nightly'",
              (at("2025-01-01T00:00:00"),))
        (fired,) = plain.evaluate(now=at("2025-01-01T00:01:00")).jobs
        enqueued = plain.enqueue("test.job")
        assert sorted((job.id, state) for job, state in plain.work_once()) == [
            (fired.id, "completed"), (enqueued, "completed")]
        assert sorted(ran) == [fired.id, enqueued]
        assert job_metadata(conn, enqueued) == {"enqueued": True}
        assert plain.runtime.tracing.tracer() is None
    finally:
        plain.close()
    assert traced.spans() == []


def test_without_opentelemetry_installed_the_engine_imports_none_of_it_and_runs_jobs(dsn: str) -> None:
    """The package made unimportable in a fresh interpreter: the worker, the pass and
    enqueue run as before, and nothing of OpenTelemetry is loaded by the engine."""
    script = """
import json, sys
sys.modules["opentelemetry"] = None  # importing it, or any of its modules, now fails
from awa_tui import Client
client = Client(sys.argv[1], operator="t@test")
client.register_handler("k", lambda job: None)
job_id = client.enqueue("k")
outcomes = [(job.id, state) for job, state in client.work_once()]
client.evaluate()
client.close()
print(json.dumps({"outcomes": outcomes, "job": job_id,
                  "loaded": sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m])}))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, "-c", script, dsn], capture_output=True, text=True, timeout=120, env=env,
                         cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert (out["outcomes"], out["loaded"]) == ([[out["job"], "completed"]], [])


def test_the_global_tracer_provider_is_used_once_the_app_sets_it(dsn: str) -> None:
    """In a fresh interpreter (the global provider can be set once per process): a Client
    given no provider emits nothing before the app sets the global one, and spans after."""
    script = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from awa_tui import Client
client = Client(sys.argv[1], operator="t@test")
client.register_handler("k", lambda job: None)
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
before = client.enqueue("k")
client.work_once()
unset = [s.name for s in exporter.get_finished_spans()]
trace.set_tracer_provider(provider)
after = client.enqueue("k")
client.work_once()
client.close()
print(json.dumps({"unset": unset, "set": [(s.name, s.attributes["messaging.message.id"])
                                          for s in exporter.get_finished_spans()], "after": after}))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, "-c", script, dsn], capture_output=True, text=True, timeout=120, env=env,
                         cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert (out["unset"], out["set"]) == ([], [["process default", str(out["after"])]])
