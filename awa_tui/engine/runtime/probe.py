"""`awa-tui check --alive` and `--registered`: the probes of one runtime (a container's
liveness and readiness). They judge this runtime only, never the schedules nor the fleet,
so one runtime's probe never fails for another's trouble, nor for a schedule's."""

from __future__ import annotations

from collections.abc import Callable

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.health.models import EXIT_CRITICAL, EXIT_OK, ProbeReport, RegisteredRuntime, RuntimeAlive
from awa_tui.engine.runtime.alive import alive_problems, fetch_alive


def probe(*, alive_at: str | None, stuck_after_s: float, hostname: str,
          registered: Callable[[str], list[RegisteredRuntime]] | None) -> ProbeReport:
    """`alive_at`: HOST:PORT of the runtime's /metrics server, asked whether it is alive and
    none of its loops stuck. `registered`: reads the fresh runtimes of `hostname` from the
    database (its errors, such as an unreachable database, propagate: cannot tell)."""
    problems: list[str] = []
    alive: RuntimeAlive | None = None
    if alive_at is not None:
        try:
            alive = fetch_alive(alive_at)
        except AwaError as exc:  # nothing answers where the runtime should: not alive
            problems.append(str(exc))
        else:
            problems += alive_problems(alive, stuck_after_s)
    found: list[RegisteredRuntime] | None = None
    if registered is not None:
        found = registered(hostname)
        if not found:
            problems.append(f"no runtime on host {hostname} has a fresh snapshot (not started, stopped, "
                            "or not reporting)")
    return ProbeReport(status="critical" if problems else "ok", exit_code=EXIT_CRITICAL if problems else EXIT_OK,
                       alive=alive, registered=found, problems=problems)
