"""One delivery round (S63): each sink's due alerts, claimed from the outbox, sent as one
message (grouped: the count and the first of them), then marked delivered, or failed with
its error and a backoff. HTTP through the standard library (urllib.request: no dependency
added), with a timeout per request and no redirects followed (a redirect could carry a
signed body elsewhere); NOTIFY on the round's own connection.

Errors are kept and logged in operator words that never quote a URL or a key.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import psycopg

from awa_tui.engine.alerts import fleet, outbox, payloads
from awa_tui.engine.alerts.models import Alert, DeliveryRound, Sink, SinkRound
from awa_tui.engine.alerts.sinks import load_sinks, mask_url, read_secret, sink_url
from awa_tui.engine.core.audit import begin_action, record_event
from awa_tui.engine.core.db import db_now
from awa_tui.engine.core.errors import AwaError

HTTP_TIMEOUT_S = 10.0
# A round stops starting sinks after this long (the rest wait for the next round), so the
# loop's step stays well under what `check --alive` calls stuck.
ROUND_BUDGET_S = 30.0
# Retention runs at most this often (a round is every second; old rows are few).
PRUNE_EVERY_S = 60.0
RESPONSE_MAX_BYTES = 64 * 1024
USER_AGENT = "awa-tui-alerts"


class DeliveryFailed(AwaError):
    """A sink did not accept a message; the text names the sink, never its URL or key."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None  # the 3xx is then an HTTPError: a failed delivery


_OPENER = urllib.request.build_opener(_NoRedirect)

Post = Callable[[str, bytes, dict[str, str], float], None]


def http_post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> None:
    """POST `body`; a 2xx answer is success, anything else raises DeliveryFailed."""
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": USER_AGENT,
                                              **headers})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read(RESPONSE_MAX_BYTES)
    except urllib.error.HTTPError as exc:
        raise DeliveryFailed(f"answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        text = getattr(reason, "strerror", None) or str(reason)
        raise DeliveryFailed(f"cannot connect: {text}") from None
    except TimeoutError:
        raise DeliveryFailed(f"no answer within {timeout:g} s") from None
    except OSError as exc:
        raise DeliveryFailed(f"cannot send: {exc.strerror or type(exc).__name__}") from None


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` without any secret in it (a library message might quote the URL)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, mask_url(secret) if "://" in secret else "(secret)")
    return text


def _alertmanager_url(base: str) -> str:
    path = urlsplit(base).path.rstrip("/")
    return base if path.endswith("/api/v2/alerts") else base.rstrip("/") + "/api/v2/alerts"


class Deliverer:
    """Sends the outbox's alerts; `post` is the HTTP transport (tests hand a real one too)."""

    def __init__(self, *, post: Post = http_post, timeout_s: float = HTTP_TIMEOUT_S,
                 backoff: outbox.Backoff = outbox.Backoff(), budget_s: float = ROUND_BUDGET_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.post = post
        self.timeout_s = timeout_s
        self.backoff = backoff
        self.budget_s = budget_s
        self.clock = clock
        self._pruned_at: float | None = None

    def round(self, conn: psycopg.Connection[Any], now: datetime | None = None,
              sinks: list[str] | None = None, holder: uuid.UUID | None = None) -> DeliveryRound:
        """Every sink's due alerts at `now` (DB time when omitted), one message per sink.
        `holder`: the runtime delivering, which must hold (or take) the deliverer's lease
        first (S70); without it the round delivers nothing (`held` False)."""
        done = []
        started = self.clock()
        prune_due = self._pruned_at is None or self.clock() - self._pruned_at >= PRUNE_EVERY_S
        # One round trip when idle (the leader's every second): the lease, the sinks and DB
        # time in one pipelined transaction, DB time only when a sink or the pruning will use it.
        with conn.pipeline(), outbox.bounded(conn):
            lease = conn.execute(*fleet.take_sql(holder, now)) if holder is not None else None
            found = load_sinks(conn, sinks)
            held = True
            if lease is not None:
                row = lease.fetchone()
                held = bool(row and row["held"])
            if held and now is None and (found or prune_due):
                now = db_now(conn)
        if not held:
            return DeliveryRound(None, (), held=False)
        if now is None:
            return DeliveryRound(None, ())
        for sink in found:
            if self.clock() - started > self.budget_s:
                break
            alerts = outbox.claim(conn, sink.name, now)
            if alerts:
                alerts = outbox.silence_claimed(conn, sink.name, alerts, now)
            if alerts:
                done.append(self._deliver(conn, sink, alerts, now))
            if sink.kind == "pagerduty" and sink.group_open:
                self._close_group(conn, sink)
        if prune_due:
            outbox.prune(conn, now)
            self._pruned_at = self.clock()
        return DeliveryRound(now, tuple(done))

    def _deliver(self, conn: psycopg.Connection[Any], sink: Sink, alerts: list[Alert], now: datetime) -> SinkRound:
        ids = [a.id for a in alerts]
        secrets: list[str] = []
        try:
            messages = self.send(conn, sink, alerts, secrets)
        except AwaError as exc:
            error = _scrub(str(exc), secrets)
            outbox.mark_failed(conn, sink.name, ids, now, error, self.backoff)
            return SinkRound(sink.name, len(alerts), 0, False, error)
        outbox.mark_delivered(conn, sink.name, ids, now)
        return SinkRound(sink.name, len(alerts), messages, True)

    def send(self, conn: psycopg.Connection[Any], sink: Sink, alerts: Sequence[Alert],
             secrets: list[str] | None = None) -> int:
        """Send `alerts` to `sink` now; returns the messages sent. Every secret read is
        appended to `secrets` (for scrubbing errors)."""
        seen = secrets if secrets is not None else []
        if sink.kind == "notify":
            with outbox.bounded(conn):  # sent when it commits
                conn.execute("SELECT pg_notify(%s, %s)", (sink.channel, payloads.notify_payload(sink.name, alerts)))
            return 1
        url = sink_url(sink)
        seen.append(url)
        if sink.kind == "webhook":
            key = read_secret(sink.key_ref or "", f"sink {sink.name}: key")
            seen.append(key)
            raw = payloads.encode(payloads.webhook_body(sink.name, alerts))
            self._post(sink, url, raw, {payloads.SIGNATURE_HEADER: payloads.signature(key, raw),
                                        "X-Awa-Group-Key": payloads.group_key(sink.name, alerts)})
            return 1
        if sink.kind == "slack":
            self._post(sink, url, payloads.encode(payloads.slack_body(alerts)), {})
            return 1
        if sink.kind == "alertmanager":
            self._post(sink, _alertmanager_url(url), payloads.encode(payloads.alertmanager_body(alerts)), {})
            return 1
        key = read_secret(sink.key_ref or "", f"sink {sink.name}: routing key")
        seen.append(key)
        events, grouped = payloads.pagerduty_events(sink.name, key, alerts)
        for event in events:
            self._post(sink, url, payloads.encode(event), {})
        if grouped and events:
            outbox.set_group_open(conn, sink.name, True)
        return len(events)

    def _close_group(self, conn: psycopg.Connection[Any], sink: Sink) -> None:
        """Resolve a PagerDuty sink's grouped incident once none of its schedules fires."""
        if outbox.open_count(conn, sink.name):
            return
        try:
            key = read_secret(sink.key_ref or "", f"sink {sink.name}: routing key")
            self._post(sink, sink_url(sink), payloads.encode(payloads.pagerduty_group_resolve(sink.name, key)), {})
        except AwaError:
            return  # tried again next round: the flag stays set
        outbox.set_group_open(conn, sink.name, False)

    def _post(self, sink: Sink, url: str, body: bytes, headers: dict[str, str]) -> None:
        try:
            self.post(url, body, headers, self.timeout_s)
        except DeliveryFailed as exc:
            raise DeliveryFailed(f"sink {sink.name} ({mask_url(url)}): {exc}") from None


TEST_SCHEDULE = "awa-tui-test"


def sample_alerts(kind: str, at: datetime) -> list[Alert]:
    """What `alerts test SINK` sends: a made-up failing alert naming no real schedule; to
    PagerDuty and Alertmanager its recovery too, so the test leaves no incident open."""
    reason = "a test alert sent by `awa-tui alerts test`: nothing is wrong"
    firing = Alert(id=0, transition_id=0, name=TEST_SCHEDULE, at=at, from_health="ok", to_health="failing",
                   reason=reason, owner=None, queue=None)
    if kind not in ("pagerduty", "alertmanager"):
        return [firing]
    return [firing, Alert(id=0, transition_id=0, name=TEST_SCHEDULE, at=at + timedelta(seconds=1),
                          from_health="failing", to_health="ok", reason=None, owner=None, queue=None)]


def send_test(conn: psycopg.Connection[Any], sink_name: str, operator: str,
              deliverer: Deliverer | None = None) -> SinkRound:
    """Send one test alert to `sink_name` now, outside the outbox; a failure raises one line.
    An operator's action: it passes the audit gate before anything is sent, so a role
    without the audit privilege pages nobody; what the sink answered is an audit event."""
    from awa_tui.engine.alerts.sinks import get_sink

    with conn.transaction():
        begin_action(conn, operator, "alert_test")
        sink = get_sink(conn, sink_name)
    deliverer = deliverer or Deliverer()
    alerts = sample_alerts(sink.kind, db_now(conn))
    secrets: list[str] = []
    try:
        # One message per alert: a test is never grouped.
        messages = sum(deliverer.send(conn, sink, [alert], secrets) for alert in alerts)
    except AwaError as exc:
        error = _scrub(str(exc), secrets)
        _record_test(conn, operator, sink.name, {"delivered": False, "error": error})
        raise DeliveryFailed(error) from None
    _record_test(conn, operator, sink.name, {"delivered": True, "alerts": len(alerts), "messages": messages})
    return SinkRound(sink.name, len(alerts), messages, True)


def _record_test(conn: psycopg.Connection[Any], operator: str, sink: str, outcome: dict[str, Any]) -> None:
    """The test's audit event: who paged which sink, and its answer (scrubbed of secrets)."""
    with conn.transaction():
        begin_action(conn, operator, "alert_test")
        record_event(conn, "alert_test", f"sink:{sink}", None, outcome)
