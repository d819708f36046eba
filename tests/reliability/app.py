"""The `--app` of the runtimes the reliability suite spawns (`awa-tui run --app reliability.app:setup`).

Configured through the environment so one module serves every scenario. It also labels
the process's database sessions `rel-<os pid>` (the leader connection `rel-<os pid> leader`)
so the harness can map a Postgres backend, and every job a backend inserts, to the OS
process that owns it.
"""

from __future__ import annotations

import os
from typing import Any

COUNT_ENV = "AWA_REL_COUNT"
EXPR_ENV = "AWA_REL_EXPR"
POLICY_ENV = "AWA_REL_POLICY"
PREFIX_ENV = "AWA_REL_PREFIX"


def app_name(pid: int) -> str:
    return f"rel-{pid}"


def schedule_names(count: int, prefix: str = "rel") -> list[str]:
    return [f"{prefix}-{i:04d}" for i in range(count)]


def setup(client: Any) -> None:
    label = app_name(os.getpid())
    # No connection is open yet: every session of this process will carry the label.
    client.application_name = label
    client.db.application_name = label
    count = int(os.environ.get(COUNT_ENV, "10"))
    expr = os.environ.get(EXPR_ENV, "* * * * * *")
    policy = os.environ.get(POLICY_ENV, "catch_up")
    for name in schedule_names(count, os.environ.get(PREFIX_ENV, "rel")):
        client.periodic(name, expr, "rel.tick", {"n": name}, missed_fire_policy=policy)
