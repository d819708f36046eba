"""The `--app` of the runtimes the reliability suite spawns (`awa-tui run --app reliability.app:setup`).

Configured through the environment so one module serves every scenario. It also labels
the process's database sessions `rel-<os pid>` (the leader connection `rel-<os pid> leader`)
so the harness can map a Postgres backend, and every job a backend inserts, to the OS
process that owns it.

`AWA_REL_FAULT=no_pause_guard` (read here only, never by the product) removes the pause
guard from this process's fire statements: the negative control that proves the suite
catches a fire on a paused schedule.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import Any

COUNT_ENV = "AWA_REL_COUNT"
EXPR_ENV = "AWA_REL_EXPR"
POLICY_ENV = "AWA_REL_POLICY"
PREFIX_ENV = "AWA_REL_PREFIX"
OVERLAP_ENV = "AWA_REL_OVERLAP"  # the schedules' overlap policy (default allow)
FAULT_ENV = "AWA_REL_FAULT"
JITTER_ENV = "AWA_REL_JITTER_MS"  # issue 16: jittered schedules (0 = none)
WORK_ENV = "AWA_REL_WORK"  # "1": this process also works the jobs (a handler completes them)
NO_POOLER_CHECK = "no_pooler_check"
NO_PAUSE_GUARD = "no_pause_guard"
NO_OVERLAP_GUARD = "no_overlap_guard"


def app_name(pid: int) -> str:
    return f"rel-{pid}"


def schedule_names(count: int, prefix: str = "rel") -> list[str]:
    return [f"{prefix}-{i:04d}" for i in range(count)]


def remove_pause_guard() -> None:
    """Fire paused schedules too: the due query and the fire statement lose their pause
    conditions. Fails loudly if the SQL no longer has them (the control would be vacuous)."""
    from awa_tui.engine.firing import evaluator

    due = evaluator.DUE_SQL.replace("c.paused_at IS NULL AND ", "").replace("g.paused_at IS NULL AND ", "")
    fire = evaluator.FIRE_BATCH_SQL.replace("AND c.paused_at IS NULL", "")
    if due == evaluator.DUE_SQL or fire == evaluator.FIRE_BATCH_SQL or "paused_at IS NULL" in due + fire:
        raise RuntimeError("reliability fault: the pause guard is not where the control expects it")
    evaluator.DUE_SQL, evaluator.FIRE_BATCH_SQL = due, fire
    logging.getLogger("awa_tui").warning("reliability fault injected: fire statements without the pause guard")


def remove_overlap_guard() -> None:
    """Enqueue every due instant whatever the overlap policy: the negative control of the
    overlap crash loop. Fails loudly if the fire statement no longer decides it there."""
    from awa_tui.engine.firing import evaluator

    fire = evaluator.FIRE_BATCH_SQL.replace("WHEN 'skip' THEN", "WHEN 'skip (disabled)' THEN").replace(
        "WHEN 'buffer_one' THEN", "WHEN 'buffer_one (disabled)' THEN")
    if fire.count("(disabled)") != 2:
        raise RuntimeError("reliability fault: the overlap decision is not where the control expects it")
    evaluator.FIRE_BATCH_SQL = fire
    logging.getLogger("awa_tui").warning("reliability fault injected: fire statements without the overlap check")


def remove_pooler_check() -> None:
    """Compete for leadership through any pooler: the route probe of the leader connection
    always answers "direct" (the renewal's own check stays). The negative control of the
    PgBouncer scenarios. Fails loudly if the probe is not where the control expects it."""
    from awa_tui.engine.runtime import leader, pooling

    if leader.probe_route is not pooling.probe_route:
        raise RuntimeError("reliability fault: the route probe is not where the control expects it")
    leader.probe_route = lambda conn, dsn, application_name: pooling.DIRECT  # type: ignore[assignment]
    logging.getLogger("awa_tui").warning("reliability fault injected: leading without the route probe")


def setup(client: Any) -> None:
    fault = os.environ.get(FAULT_ENV, "")
    if fault == NO_PAUSE_GUARD:
        remove_pause_guard()
    elif fault == NO_POOLER_CHECK:
        remove_pooler_check()
    elif fault == NO_OVERLAP_GUARD:
        remove_overlap_guard()
    elif fault:
        raise ValueError(f"unknown {FAULT_ENV}: {fault!r}")
    label = app_name(os.getpid())
    # No connection is open yet: every session of this process will carry the label.
    client.application_name = label
    client.db.application_name = label
    count = int(os.environ.get(COUNT_ENV, "10"))
    expr = os.environ.get(EXPR_ENV, "* * * * * *")
    policy = os.environ.get(POLICY_ENV, "catch_up")
    jitter = timedelta(milliseconds=int(os.environ.get(JITTER_ENV, "0")))
    for name in schedule_names(count, os.environ.get(PREFIX_ENV, "rel")):
        client.periodic(name, expr, "rel.tick", {"n": name}, missed_fire_policy=policy,
                        overlap=os.environ.get(OVERLAP_ENV, "allow"), jitter=jitter or None)
    if os.environ.get(WORK_ENV) == "1":
        client.register_handler("rel.tick", lambda job: None)
