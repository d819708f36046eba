"""Upstream mode of the CLI: the same commands on a database whose `awa` schema belongs to
upstream Awa (awa-pg), through the backend the console drives (engine/upstream/backend.py).

`make_client` (common.py) returns that backend in place of a Client when the schema is
upstream's: the commands read and act through the same typed protocols (ReadBackend,
ActionBackend), and what upstream's schema lacks is refused in one line naming what it needs
(engine/upstream/refusal.py). An action awa-tui's audit trail did not record says so on stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from awa_tui.cli.common import warn
from awa_tui.engine.core.errors import Conflict

if TYPE_CHECKING:
    from awa_tui.engine.upstream.backend import UpstreamBackend
    from awa_tui.engine.upstream.models import ActionOutcome

NOT_AUDITED = (
    "warning: not audited: this database has no awa-tui audit trail; "
    "run `awa-tui db init-audit` to record operator actions"
)


def upstream_backend(dsn: str, *, operator: str, read_only: bool) -> UpstreamBackend:
    """Upstream mode's backend for one command, which warns once (a bulk action too) when
    an action was not audited."""
    from awa_tui.engine.upstream.backend import UpstreamBackend

    warned: list[ActionOutcome] = []

    def unaudited(outcome: ActionOutcome) -> None:
        if not warned:
            warn(NOT_AUDITED)
        warned.append(outcome)

    return UpstreamBackend(dsn, operator=operator, read_only=read_only, application_name="awa-tui cli",
                           on_unaudited=unaudited)


def database_status(dsn: str) -> dict[str, Any]:
    """`db status` of a configured database: where (no password), which schema and version,
    and in upstream mode whether awa-tui's audit trail exists."""
    from awa_tui.engine.core.db import describe_dsn
    from awa_tui.engine.migrations.detect import detect_at
    from awa_tui.engine.upstream.adapter import UpstreamAdapter

    info = detect_at(dsn)
    audit_trail: bool | None = None
    if info.kind == "upstream":
        adapter = UpstreamAdapter(dsn, read_only=True, application_name="awa-tui cli")
        try:
            audit_trail = adapter.audited()
        finally:
            adapter.close()
    return {"database": describe_dsn(dsn), "schema": info.kind, "version": info.version, "detail": info.detail,
            "upstream_mode": info.kind == "upstream", "audit_trail": audit_trail}


def init_upstream_audit(dsn: str) -> dict[str, Any]:
    """Create awa-tui's audit trail beside an upstream Awa schema (the operator's consent is
    this command); refused in one line on any other database."""
    from awa_tui.engine.migrations.detect import detect_at
    from awa_tui.engine.upstream.adapter import init_audit

    info = detect_at(dsn)
    if info.kind == "awa-tui":
        raise Conflict(f"init-audit is for upstream Awa databases; this database holds {info.detail}, "
                       "whose audit trail is built in")
    if info.kind != "upstream":
        raise Conflict(f"init-audit is for upstream Awa databases; this database has {info.detail}")
    return {"created": init_audit(dsn), "schema": "awa_tui_audit", "table": "awa_tui_audit.audit_log"}
