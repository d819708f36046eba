"""The read models of alerts (S63): a sink as shown (its secrets masked), one delivery of
one alert to one sink, a silence, and what a delivery round did."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

# Where alerts can go.
KINDS = ("webhook", "slack", "pagerduty", "alertmanager", "notify")
# How a sink picks its alerts: every one, or the schedules of an owner, a queue, a tag, or
# a severity (warning: every alert; critical: broken, failing and missed only).
ROUTES = ("all", "owner", "queue", "tag", "severity")
SEVERITIES = ("warning", "critical")
# What `alerts list` shows of a delivery: pending (never tried), failing (tried, not yet
# accepted), delivered, silenced.
STATES = ("pending", "failing", "delivered", "silenced")


# The fleet's health (S70): ok, no_leader (nobody has led for longer than a grace),
# stalled (a leader holds the lock but its lease or its passes stopped).
FLEET_STATES = ("ok", "no_leader", "stalled")
FLEET_WORDS = {"ok": "a leader leads and passes", "no_leader": "no leader", "stalled": "leader stalled"}


def severity_of(health: str | None) -> str | None:
    """critical (broken, failing, missed; no leader, a stalled leader), warning (late),
    None (no alert); as the migration's awa.alert_severity."""
    if health in ("broken", "failing", "missed", "no_leader", "stalled"):
        return "critical"
    if health == "late":
        return "warning"
    return None


@dataclass(frozen=True)
class SinkInfo:
    """A sink as every read shows it: a stored URL as its scheme and host only; a secret
    read from the environment or a file as where it is read from."""

    name: str
    kind: str
    route_by: str
    route_value: str | None
    target: str  # masked URL, `env:NAME`, `file:/path`, or `channel NAME`
    key_from: str | None  # `env:NAME` / `file:/path` of the HMAC or routing key
    created_at: datetime | None

    @property
    def route(self) -> str:
        return "all" if self.route_value is None else f"{self.route_by} {self.route_value}"


@dataclass(frozen=True)
class Sink:
    """A sink as the deliverer reads it (engine-internal: holds a stored URL in clear)."""

    name: str
    kind: str
    route_by: str
    route_value: str | None
    url: str | None = field(repr=False)  # a stored URL may be the secret: never in a repr or a log
    url_ref: str | None
    key_ref: str | None
    channel: str | None
    group_open: bool = False


@dataclass(frozen=True)
class Alert:
    """One outbox row: a transition that starts or ends an alert (S63), of a schedule or,
    `fleet`, of the fleet as a whole (S70: `name` is then 'fleet')."""

    id: int
    transition_id: int
    name: str
    at: datetime
    from_health: str | None
    to_health: str
    reason: str | None
    owner: str | None
    queue: str | None
    tags: tuple[str, ...] = ()
    fleet: bool = False

    @property
    def firing(self) -> bool:
        return severity_of(self.to_health) is not None

    @property
    def resolves(self) -> str | None:
        """The condition this transition ends (its from health when that was an alert)."""
        return self.from_health if severity_of(self.from_health) is not None else None

    @property
    def severity(self) -> str:
        return severity_of(self.to_health) or severity_of(self.from_health) or "warning"

    @property
    def dedupe_key(self) -> str:
        """Stable for this transition: a receiver that sees it twice (at-least-once) drops one."""
        if self.fleet:
            return f"awa-fleet/{self.transition_id}"
        return f"awa/{self.name}/{self.transition_id}"

    def condition_key(self, health: str) -> str:
        return fleet_key(health) if self.fleet else condition_key(self.name, health)


def condition_key(name: str, health: str) -> str:
    """The key of one schedule's one condition (PagerDuty's dedup_key, Alertmanager's
    labels): the trigger and the resolve of `failing` name the same incident."""
    return f"awa/{name}/{health}"


def fleet_key(state: str) -> str:
    """The key of one fleet condition: `no leader`'s trigger and resolve name one incident
    (apart from any schedule's: a schedule may be named 'fleet')."""
    return f"awa-fleet/{state}"


@dataclass(frozen=True)
class AlertDelivery:
    """One alert to one sink, as `alerts list` shows it."""

    id: int
    name: str
    at: datetime
    from_health: str | None
    to_health: str
    reason: str | None
    sink: str
    state: str  # pending | failing | delivered | silenced
    open: bool  # the alert is still firing: the schedule's latest alert, to an unhealthy state
    attempts: int
    last_error: str | None
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    fleet: bool = False  # an alert about the fleet (S70): `name` is 'fleet'
    owner: str | None = None  # the schedule's owner when the alert was recorded (what an owner's silence matches)


@dataclass(frozen=True)
class Silence:
    id: int
    name: str | None  # one schedule; or
    starts_at: datetime
    until: datetime
    reason: str
    created_by: str
    silenced: int = 0  # deliveries already waiting that it silenced
    owner: str | None = None  # an owner's schedules (S71); or
    filter: str | None = None  # the schedules a filter selects, judged at each delivery

    @property
    def target(self) -> str:
        """What it silences, in operator words."""
        if self.owner is not None:
            return f"owner {self.owner}"
        if self.filter is not None:
            return f"filter {self.filter}"
        return f"schedule {self.name}"


@dataclass(frozen=True)
class SinkRound:
    """One sink's share of a delivery round."""

    sink: str
    alerts: int  # alerts sent (grouped into `messages`)
    messages: int
    delivered: bool
    error: str | None = None


@dataclass(frozen=True)
class DeliveryRound:
    now: datetime | None  # None: an idle round that read no clock (no sink, nothing to prune)
    sinks: tuple[SinkRound, ...]
    held: bool = True  # False: another runtime holds the deliverer's lease (S70); nothing done

    @property
    def delivered(self) -> int:
        return sum(s.alerts for s in self.sinks if s.delivered)

    @property
    def failed(self) -> int:
        return sum(s.alerts for s in self.sinks if not s.delivered)
