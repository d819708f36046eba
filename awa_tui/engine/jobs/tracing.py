"""OpenTelemetry spans of fires and jobs (the `otel` extra: opentelemetry-api only).

On only when the app configured a tracer provider: `Client(tracer_provider=...)`, else the
global one once the app set it. Off, every call here returns at once and OpenTelemetry is
never imported (an app that never imported it cannot have configured it).

A fire and its job share one trace with nothing of it stored and the fire statement
unchanged: the trace context is derived from the fire's identity (schedule name and
instant, `fire_ids`), so the leader that fired and the worker that runs the job, in other
processes and at other times, compute the same trace id and parent span id. No span has
that parent id (the API cannot choose a span's own id): the leader's `fire` span and every
attempt's `process` span are its children, siblings in one trace. A job enqueued inside a
span carries that span's W3C `traceparent` in its metadata, and its attempts continue it."""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from awa_tui.engine.firing.evaluator import FiredJob
    from awa_tui.engine.jobs.context import Job

_API = "opentelemetry.trace"
TRACER = "awa_tui"
SYSTEM = "awa"  # messaging.system: ours is not among the spec's well-known values
# What an attempt's end state says in awa.job.outcome.
OUTCOMES = {"completed": "completed", "retryable": "retry", "discarded": "failed", "cancelled": "cancelled"}
_FAILED = frozenset({"failed", "retry"})  # the outcomes that record the handler's exception
_W3C = ("traceparent", "tracestate")
# At most this many `fire` spans a pass (its first fires): a span costs the SDK about 40 us,
# and a pass of 100k fires would otherwise spend 4 s on them before the next pass. The jobs
# of the rest still carry their fire's trace (the worker derives it): only the fire span is left out.
FIRE_SPANS = 1000
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


def fire_ids(name: str, instant: str) -> tuple[int, int] | None:
    """The trace id and parent span id of the fire of schedule `name` at `instant` (its
    metadata text, any ISO-8601 form): the first 16 and next 8 bytes of the SHA-256 of
    "awa.fire", the name and the instant as stamped (UTC, Z), one per line. None when
    `instant` is no instant."""
    from awa_tui.engine.cron.expression import iso_utc
    from awa_tui.engine.ledger.models import stored_instant

    at = stored_instant(instant)
    if at is None:
        return None
    if at.tzinfo is None:
        return None  # an instant without its zone names no one moment: no fire to link to
    digest = hashlib.sha256(f"awa.fire\n{name}\n{iso_utc(at)}".encode()).digest()
    # An all-zero id is invalid in W3C trace context; 1 in 2**64 odds, kept valid anyway.
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def _fire_context(name: str, instant: str) -> Any | None:
    """The fire's derived context, remote and sampled: every process that derives it makes
    the same ParentBased sampling decision, so a fire's spans are kept or dropped together."""
    ids = fire_ids(name, instant)
    if ids is None:
        return None
    from opentelemetry import trace
    from opentelemetry.context import Context

    parent = trace.SpanContext(ids[0], ids[1], is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    return trace.set_span_in_context(trace.NonRecordingSpan(parent), Context())


def job_parent(job: Job) -> Any:
    """Where an attempt's span hangs: its fire's derived context, else the W3C trace context
    its enqueuer left in its metadata, else nothing (a new trace; never the worker's own
    current context)."""
    from opentelemetry.context import Context

    instant = job.metadata.get("cron_fire_time")
    if job.schedule is not None and isinstance(instant, str):
        fired = _fire_context(job.schedule, instant)
        if fired is not None:
            return fired
    carrier = {key: value for key in _W3C if isinstance(value := job.metadata.get(key), str)}
    if not carrier:
        return Context()
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(carrier, Context())


def propagated(metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """The caller's active span as W3C trace context, for an enqueued job's metadata; empty
    without an active span, or when the caller's metadata already carries a traceparent (a
    creation context of the caller's own is kept as given)."""
    api = sys.modules.get(_API)
    if api is None or (metadata is not None and "traceparent" in metadata):
        return {}
    if not api.get_current_span().get_span_context().is_valid:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier


class Tracing:
    """The spans of one runtime, from its tracer provider (None: the global one, once set)."""

    def __init__(self, provider: Any | None = None) -> None:
        self.provider = provider
        self._tracer: Any = None
        self._of: Any = None  # the provider _tracer came from

    def tracer(self) -> Any | None:
        """The tracer, or None while tracing is off."""
        provider = self.provider
        if provider is None:
            api = sys.modules.get(_API)
            if api is None:
                return None
            provider = api.get_tracer_provider()
            if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
                return None  # no global provider set: the API's default, which records nothing
        if provider is not self._of:
            from awa_tui import __version__

            self._tracer, self._of = provider.get_tracer(TRACER, __version__), provider
        return self._tracer

    def fired(self, jobs: Sequence[FiredJob], started_ns: int) -> None:
        """A `fire` span for each job a pass enqueued (the first FIRE_SPANS), from the pass's
        start to now: the fire statement returns each job's id, schedule and instant, and
        nothing more is read."""
        tracer = self.tracer()
        if tracer is None:
            return
        from opentelemetry import trace

        made = 0
        for fired in jobs:
            if fired.outcome != "job":
                continue
            if made >= FIRE_SPANS:
                return
            made += 1
            parent = _fire_context(fired.name, fired.fire_time)
            if parent is None:
                continue
            tracer.start_span("fire", parent, kind=trace.SpanKind.PRODUCER, start_time=started_ns, attributes={
                "messaging.system": SYSTEM, "messaging.operation.type": "create",
                "messaging.operation.name": "fire", "messaging.message.id": str(fired.id),
                "awa.schedule.name": fired.name, "awa.fire.instant": fired.fire_time,
            }).end()

    def job(self, job: Job) -> Any | None:
        """The span of one attempt, started at its claim (None while tracing is off)."""
        tracer = self.tracer()
        if tracer is None:
            return None
        from opentelemetry import trace

        parent = job_parent(job)
        attributes: dict[str, str | int] = {
            "messaging.system": SYSTEM, "messaging.operation.type": "process", "messaging.operation.name": "process",
            "messaging.destination.name": job.queue, "messaging.message.id": str(job.id),
            "awa.job.kind": job.kind, "awa.job.attempt": job.attempt,
        }
        if job.schedule is not None:
            attributes["awa.schedule.name"] = job.schedule
        instant = job.metadata.get("cron_fire_time")
        if isinstance(instant, str):
            attributes["awa.fire.instant"] = instant
        # The spec's consumer span links to the message's creation context; here it is the
        # parent too (push-based processing, no receive span).
        creation = trace.get_current_span(parent).get_span_context()
        links = [trace.Link(creation)] if creation.is_valid else []
        return tracer.start_span(f"process {job.queue}", parent, kind=trace.SpanKind.CONSUMER, attributes=attributes,
                                 links=links)


def active(span: Any | None) -> contextlib.AbstractContextManager[Any]:
    """`span` as the current span while a handler runs (its own spans are its children)."""
    return _OFF if span is None else _current(span)


@contextlib.contextmanager
def _current(span: Any) -> Iterator[Any]:
    from opentelemetry import trace

    # The outcome is the worker's to record (a retry and a final failure differ).
    with trace.use_span(span, record_exception=False, set_status_on_exception=False):
        yield span


def end_span(span: Any | None, state: str, error: BaseException | None = None) -> None:
    """End an attempt's span with its outcome (`state`: the job's new state, or "released"
    for a job given back unstarted); a failure records its exception and status ERROR."""
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    outcome = OUTCOMES.get(state, state)
    span.set_attribute("awa.job.outcome", outcome)
    if error is not None and outcome in _FAILED:
        span.record_exception(error)
        span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.end()
