"""The alerts loop of a runtime (S63, S70): a loop of its own (never the evaluator's nor
the duties'), on a connection of its own, each statement under the deliverer's own lock and
statement timeouts (alerts/outbox.py, per transaction: safe through a pooler), so a slow or
dead receiver delays no fire and no health pass.

Every runtime runs it, leading or not: each step judges the fleet's health now and then
and records a change of it (engine/alerts/fleet.py: once, whoever sees it first); then the
runtime delivers if it may (the leader; a follower only while nobody leads) and holds the
deliverer's lease (one deliverer at a time). A delivery round is engine/alerts/deliver.py's;
a database error drops the connection and the loop backs off like the others."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg

from awa_tui.engine.alerts import fleet
from awa_tui.engine.alerts.deliver import Deliverer
from awa_tui.engine.alerts.fleet import FleetHealth, FleetThresholds, FleetTransition
from awa_tui.engine.alerts.models import DeliveryRound
from awa_tui.engine.core.db import connect, translate
from awa_tui.printable import printable_logger

log = printable_logger("awa_tui.alerts")

ALERTS_INTERVAL_S = 1.0  # how often the deliverer looks for due deliveries (one index probe per sink)
FLEET_WATCH_INTERVAL_S = 2.0  # how often each runtime judges the fleet's health (one read)
# A schema rolled back below v028 has no fleet tables: looked for again this often, so a
# runtime that outlives the rollback watches again once the schema is migrated forward.
NO_FLEET_TABLE_RECHECK_S = 60.0
# A watch this long after the one before (this process was frozen, or its loop waited on a
# receiver) forgets what it saw: it vouches for nobody leading only from its new look on.
WATCH_GAP_S = 3 * FLEET_WATCH_INTERVAL_S


class AlertLoop:
    """Delivery rounds and the fleet's watch on a dedicated connection, opened on first use
    and after an error."""

    def __init__(self, dsn: str, application_name: str, deliverer: Deliverer | None = None, *,
                 instance_id: uuid.UUID | None = None, thresholds: FleetThresholds | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.dsn = dsn
        self.application_name = application_name
        self.deliverer = deliverer or Deliverer()
        self.instance_id = instance_id or uuid.uuid4()
        self.thresholds = thresholds or FleetThresholds()
        self.clock = clock
        self._conn: psycopg.Connection[Any] | None = None
        self.last: DeliveryRound | None = None
        self.fleet: FleetHealth | None = None  # the fleet as last judged by this runtime
        self.recorded: list[FleetTransition] = []  # the changes this runtime recorded
        self._watched_at: float | None = None
        self._watching_since: datetime | None = None  # DB time of this loop's first look
        self._last_held: datetime | None = None  # DB time it last saw a session hold the leader lock
        self._no_fleet_table_at: float | None = None  # when a schema before v028 was seen (no watch)
        self._held = False
        self.watches = 0  # the fleet's watches done (tests wait on it)

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.dsn, application_name=f"{self.application_name} alerts")
        return self._conn

    @property
    def _no_fleet_table(self) -> bool:
        return self._no_fleet_table_at is not None

    def watch(self, now: datetime | None = None) -> FleetHealth | None:
        """Judge the fleet and record a change of its health (once, whichever runtime sees it)."""
        if self._no_fleet_table_at is not None and self.clock() - self._no_fleet_table_at < NO_FLEET_TABLE_RECHECK_S:
            return None
        if self._watched_at is not None and self.clock() - self._watched_at > WATCH_GAP_S:
            self._watching_since = self._last_held = None
        try:
            health, recorded = fleet.record(self._connection(), self.thresholds, self.instance_id, now,
                                            self._watching_since, self._last_held)
        except psycopg.errors.UndefinedTable:
            if self._no_fleet_table_at is None:  # said once, not at every look
                log.warning("alerts: this schema has no fleet alerts (before v028); the fleet is not watched "
                            "until it is migrated forward")
            self._no_fleet_table_at = self.clock()
            self.close()
            return None
        except psycopg.Error as exc:
            self.close()
            raise translate(exc) from None
        if self._no_fleet_table_at is not None:
            self._no_fleet_table_at = None
            log.info("alerts: the schema has fleet alerts again; the fleet is watched")
        if self._watching_since is None:
            self._watching_since = health.now
        if health.held:
            self._last_held = health.now
        self._watched_at = self.clock()
        self.fleet = health
        self.watches += 1
        if recorded is not None:
            self.recorded.append(recorded)
            if recorded.to_state == "ok":
                log.info("alerts: the fleet recovered: %s", recorded.reason)
            else:
                log.warning("alerts: the fleet is %s: %s", recorded.to_state.replace("_", " "), recorded.reason)
        return health

    def step(self, now: datetime | None = None, *, leads: bool = True) -> DeliveryRound | None:
        """One step: the fleet's watch when due, then one delivery round if this runtime may
        deliver (`leads`, or nobody leads) and holds the deliverer's lease. Failures to
        deliver are recorded in the outbox and logged as one line per sink (never a URL or key)."""
        due = self._watched_at is None or self.clock() - self._watched_at >= FLEET_WATCH_INTERVAL_S
        if due or now is not None:
            self.watch(now)
        may = leads or (self.fleet is not None and not self.fleet.led and not self._no_fleet_table)
        try:
            if not may:
                if self._held:  # someone leads again: the leader delivers from its next round
                    fleet.let_go(self._connection(), self.instance_id, now)
                    self._held = False
                return None
            holder = None if self._no_fleet_table else self.instance_id  # before v028: no lease to hold
            done = self.deliverer.round(self._connection(), now, holder=holder)
        except psycopg.Error as exc:
            self.close()
            raise translate(exc) from None
        self._held = done.held and holder is not None
        for sink in done.sinks:
            if sink.delivered:
                log.info("alerts: %d delivered to %s in %d message(s)", sink.alerts, sink.sink, sink.messages)
            else:
                log.warning("alerts: %d not delivered: %s", sink.alerts, sink.error)
        self.last = done
        return done

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                if self._held and not conn.closed and not conn.broken:
                    fleet.let_go(conn, self.instance_id)  # the next deliverer need not wait out the lease
            except psycopg.Error as exc:
                log.warning("alerts: letting the deliverer's lease go failed: %s", translate(exc))
            self._held = False
            try:
                conn.close()
            except psycopg.Error as exc:
                log.warning("alerts: closing the connection failed: %s", translate(exc))
