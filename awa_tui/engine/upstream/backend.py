"""Upstream mode's backend (ConsoleBackend): its reads and its operator actions on an
upstream Awa (awa-pg) database, driven alike by the console and the CLI."""

from __future__ import annotations

from collections.abc import Callable

from awa_tui.config import default_operator
from awa_tui.engine.backend.protocol import FEATURES, OWN_SCHEMA_FEATURES
from awa_tui.engine.core.guards import check_operator
from awa_tui.engine.upstream.actions import UpstreamActions
from awa_tui.engine.upstream.adapter import UpstreamAdapter
from awa_tui.engine.upstream.models import ActionOutcome
from awa_tui.engine.upstream.reads import UpstreamReads

FEATURES_NOTE = (
    "upstream Awa mode: owners, plan, retire/restore, calendars, the fire ledger and runtime health are awa-tui "
    "features this upstream schema does not have, so their keys are left out"
)


class UpstreamBackend:
    """ConsoleBackend on an upstream Awa database: `reads` (UpstreamReads), `actions`
    (UpstreamActions), and which of FEATURES this schema version has."""

    def __init__(self, dsn: str, *, operator: str | None = None, read_only: bool = False,
                 adapter: UpstreamAdapter | None = None, application_name: str = "awa-tui console",
                 on_unaudited: Callable[[ActionOutcome], None] | None = None) -> None:
        self.dsn = dsn
        self.read_only = read_only
        self.operator = default_operator() if operator is None else check_operator(operator)
        self.adapter = adapter or UpstreamAdapter(dsn, read_only=read_only, application_name=application_name)
        caps = self.adapter.capabilities()  # also checks, once, that the schema is upstream's
        supported = {"schedule_pause": caps.schedule_pause, "trigger": caps.trigger, "queue_pause": caps.queue_pause}
        self.features = frozenset(name for name, ok in supported.items() if ok)
        missing = sorted(FEATURES - self.features - OWN_SCHEMA_FEATURES)
        self.features_note: str | None = FEATURES_NOTE + (
            f"; this schema version also lacks {', '.join(m.replace('_', ' ') for m in missing)}" if missing else "")
        self._reads = UpstreamReads(self.adapter)
        self._actions = UpstreamActions(self.adapter, self._reads, operator=self.operator, on_unaudited=on_unaudited)

    @property
    def reads(self) -> UpstreamReads:
        return self._reads

    @property
    def actions(self) -> UpstreamActions:
        return self._actions

    def close(self) -> None:
        self.adapter.close()
