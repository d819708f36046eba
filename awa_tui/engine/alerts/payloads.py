"""What each kind of sink receives (S63; the schemas are in docs/alerts.md): pure
functions of the alerts of one delivery round to one sink, so one round is one message per
sink whatever the count (a fleet-wide outage: one message naming the count).

- webhook: one JSON document (version 1) listing up to MAX_LISTED alerts and counting all;
- slack: an incoming webhook's {"text": ...}, one line per alert up to SLACK_LINES, then the count;
- pagerduty: Events API v2, a resolve and/or a trigger per transition keyed by schedule and
  condition; above PAGERDUTY_GROUP events in one round, one trigger for the whole round;
- alertmanager: API v2 postable alerts, one array per round (Alertmanager groups them);
- notify: one pg_notify payload (under Postgres' 8000-byte limit) with the count and the first names.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from awa_tui.engine.alerts.models import FLEET_WORDS, Alert, severity_of

SCHEMA_VERSION = 1
MAX_LISTED = 100
SLACK_LINES = 10
PAGERDUTY_GROUP = 20
NOTIFY_NAMES = 20
NOTIFY_MAX_BYTES = 7900
# An Alertmanager alert without endsAt resolves itself after its resolve_timeout (5 min by
# default) unless sent again; ours are sent once, so a firing one ends this far ahead
# unless its resolution (endsAt = the recovery) arrives first.
ALERTMANAGER_HORIZON = timedelta(days=7)
SIGNATURE_HEADER = "X-Awa-Signature-256"

_ALERTNAMES = {"late": "AwaScheduleLate", "failing": "AwaScheduleFailing", "missed": "AwaScheduleMissed",
               "broken": "AwaScheduleBroken", "no_leader": "AwaNoLeader", "stalled": "AwaLeaderStalled"}


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def headline(alert: Alert) -> str:
    """One line of operator words for one alert."""
    if alert.fleet:
        if alert.firing:
            return f"awa-tui fleet: {FLEET_WORDS[alert.to_health]}: {alert.reason or 'no reason recorded'}"
        was = FLEET_WORDS[alert.from_health or "ok"]
        return f"awa-tui fleet recovered: {alert.reason or 'a leader leads'} (was {was})"
    if alert.firing:
        was = f" (was {alert.from_health})" if alert.resolves else ""
        return f"schedule {alert.name} is {alert.to_health}{was}: {alert.reason or 'no reason recorded'}"
    return f"schedule {alert.name} recovered: {alert.to_health}, was {alert.from_health}"


def group_line(alerts: Sequence[Alert]) -> str:
    """One line naming the count: `3 schedules changed health: late 2, recovered 1`."""
    if len(alerts) == 1:
        return headline(alerts[0])
    counts = Counter((FLEET_WORDS[a.to_health] if a.fleet else a.to_health) if a.firing else "recovered"
                     for a in alerts)
    parts = ", ".join(f"{word} {n:,}" for word, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    if any(a.fleet for a in alerts):
        return f"{len(alerts):,} alerts: {parts}"
    return f"{len(alerts):,} schedules changed health: {parts}"


def _alert_json(alert: Alert) -> dict[str, Any]:
    return {
        "dedupe_key": alert.dedupe_key,
        "scope": "fleet" if alert.fleet else "schedule",
        "schedule": None if alert.fleet else alert.name,
        "status": "firing" if alert.firing else "resolved",
        "health": alert.to_health,
        "previous_health": alert.from_health,
        "severity": alert.severity,
        "reason": alert.reason,
        "at": _iso(alert.at),
        "owner": alert.owner,
        "queue": alert.queue,
        "tags": list(alert.tags),
    }


def group_key(sink: str, alerts: Sequence[Alert]) -> str:
    """Stable for the same alerts to the same sink: a retried message keeps its key."""
    return f"awa/{sink}/{alerts[0].id}-{alerts[-1].id}/{len(alerts)}"


def webhook_body(sink: str, alerts: Sequence[Alert]) -> dict[str, Any]:
    listed = alerts[:MAX_LISTED]
    return {
        "version": SCHEMA_VERSION,
        "source": "awa-tui",
        "sink": sink,
        "group_key": group_key(sink, alerts),
        "summary": group_line(alerts),
        "count": len(alerts),
        "firing": sum(1 for a in alerts if a.firing),
        "resolved": sum(1 for a in alerts if not a.firing),
        "truncated": len(alerts) - len(listed),
        "alerts": [_alert_json(a) for a in listed],
    }


def encode(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signature(key: str, raw: bytes) -> str:
    """The webhook's signature header value: `sha256=` and the HMAC-SHA256 of the exact
    body bytes under the sink's key, in lower-case hex."""
    return "sha256=" + hmac.new(key.encode("utf-8"), raw, hashlib.sha256).hexdigest()


def _slack_escape(text: str) -> str:
    # Slack's three control characters in message text (its "Formatting text" guide).
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(alerts: Sequence[Alert]) -> dict[str, Any]:
    lines = [f"awa-tui: {group_line(alerts)}"] if len(alerts) > 1 else []
    lines += [f"• {headline(a)}" if len(alerts) > 1 else f"awa-tui: {headline(a)}" for a in alerts[:SLACK_LINES]]
    if len(alerts) > SLACK_LINES:
        lines.append(f"… and {len(alerts) - SLACK_LINES:,} more")
    return {"text": _slack_escape("\n".join(lines))}


def _pd_severity(alert: Alert) -> str:
    return "critical" if severity_of(alert.to_health) == "critical" else "warning"


def pagerduty_events(sink: str, routing_key: str, alerts: Sequence[Alert]) -> tuple[list[dict[str, Any]], bool]:
    """The Events API v2 bodies for one round, in order, and whether they are the round's
    one grouped trigger (above PAGERDUTY_GROUP events)."""
    events: list[dict[str, Any]] = []
    for alert in alerts:
        if alert.resolves:
            events.append({"routing_key": routing_key, "event_action": "resolve",
                           "dedup_key": alert.condition_key(alert.resolves)})
        if alert.firing:
            events.append({
                "routing_key": routing_key, "event_action": "trigger",
                "dedup_key": alert.condition_key(alert.to_health),
                "payload": {
                    "summary": headline(alert)[:1024],
                    "source": "awa-tui",
                    "severity": _pd_severity(alert),
                    "timestamp": _iso(alert.at),
                    "component": "awa-tui fleet" if alert.fleet else alert.name,
                    "group": alert.queue or "",
                    "class": alert.to_health,
                    "custom_details": _alert_json(alert),
                },
            })
    if len(events) <= PAGERDUTY_GROUP:
        return events, False
    firing = [a for a in alerts if a.firing]
    if not firing:
        return [], True  # only recoveries: the grouped incident resolves when all recovered
    worst = "critical" if any(_pd_severity(a) == "critical" for a in firing) else "warning"
    return [{
        "routing_key": routing_key, "event_action": "trigger", "dedup_key": pagerduty_group_key(sink),
        "payload": {
            "summary": f"awa-tui: {group_line(alerts)}"[:1024],
            "source": "awa-tui", "severity": worst, "timestamp": _iso(alerts[-1].at),
            "custom_details": {"count": len(alerts), "firing": len(firing),
                               "schedules": [a.name for a in firing if not a.fleet][:MAX_LISTED]},
        },
    }], True


def pagerduty_group_key(sink: str) -> str:
    return f"awa/{sink}/group"


def pagerduty_group_resolve(sink: str, routing_key: str) -> dict[str, Any]:
    return {"routing_key": routing_key, "event_action": "resolve", "dedup_key": pagerduty_group_key(sink)}


def _am_alert(alert: Alert, health: str, starts: datetime, ends: datetime) -> dict[str, Any]:
    labels = {"alertname": _ALERTNAMES[health], "schedule": "" if alert.fleet else alert.name,
              "owner": alert.owner or "",
              "queue": alert.queue or "", "severity": severity_of(health) or "warning", "source": "awa-tui"}
    return {
        # An empty label is no label to Alertmanager: left out, so ours match what it keeps.
        "labels": {k: v for k, v in labels.items() if v},
        "annotations": {"summary": headline(alert), "description": alert.reason or ""},
        "startsAt": _iso(starts),
        "endsAt": _iso(ends),
    }


def alertmanager_body(alerts: Sequence[Alert]) -> list[dict[str, Any]]:
    """POST /api/v2/alerts: a resolution ends the condition's alert at the recovery (the
    same labels, endsAt = then); a new condition starts its own."""
    out = []
    for alert in alerts:
        if alert.resolves:
            out.append(_am_alert(alert, alert.resolves, alert.at - timedelta(seconds=1), alert.at))
        if alert.firing:
            out.append(_am_alert(alert, alert.to_health, alert.at, alert.at + ALERTMANAGER_HORIZON))
    return out


def notify_payload(sink: str, alerts: Sequence[Alert]) -> str:
    """One NOTIFY payload: the count, per health, the first names; always under the limit."""
    body: dict[str, Any] = {"version": SCHEMA_VERSION, "source": "awa-tui", "sink": sink,
                            "group_key": group_key(sink, alerts), "summary": group_line(alerts),
                            "count": len(alerts)}
    if any(a.fleet for a in alerts):
        body["fleet"] = [a.to_health for a in alerts if a.fleet]
    names = [a.name for a in alerts[:NOTIFY_NAMES] if not a.fleet]
    while True:
        body["schedules"] = names
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        if len(text.encode("utf-8")) <= NOTIFY_MAX_BYTES or not names:
            return text
        names = names[: len(names) // 2]
