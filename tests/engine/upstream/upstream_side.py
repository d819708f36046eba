"""Upstream Awa's side of the upstream-mode tests; runs in .venv-awa-pg (at the root), never in ours.

It imports only the standard library and `awa` (the awa-pg package). One JSON object per
line on stdout tells the driver (awa_pg_env.UpstreamProcess) what happened.

    python upstream_side.py migrate URL
    python upstream_side.py run URL SPEC_JSON

SPEC_JSON: {"schedules": [{"name", "cron", "args_class", "queue", "timezone"?, "policy"?}],
            "queues": [[queue, max_workers], ...], "leader_ms": int}
`run` registers the schedules with upstream's own `periodic()` (the job kind is derived by
upstream from the args class name, e.g. UpTick -> up_tick), a handler for each kind (it
completes at once), starts upstream's runtime (leader + workers) and runs until its
stdin closes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import time
from typing import Any

import awa


def emit(event: str, **data: object) -> None:
    print(json.dumps({"event": event, "t": time.time(), **data}), flush=True)


def args_type(class_name: str) -> type:
    """A field-less dataclass: its class name is what upstream derives the job kind from."""
    return dataclasses.make_dataclass(class_name, [])


async def migrate(url: str) -> None:
    client = awa.AsyncClient(url)
    await client.migrate()
    emit("migrated")


async def run(url: str, spec: dict[str, Any]) -> None:
    client = awa.AsyncClient(url)
    types = {s["args_class"]: args_type(s["args_class"]) for s in spec["schedules"]}
    queue_of = {s["args_class"]: s["queue"] for s in spec["schedules"]}
    for s in spec["schedules"]:
        kind_type = types[s["args_class"]]
        # missed_fire_policy only when asked for: releases before 0.6 do not take it.
        extra = {"missed_fire_policy": s["policy"]} if "policy" in s else {}
        client.periodic(s["name"], s["cron"], kind_type, kind_type(), queue=s["queue"],
                        timezone=s.get("timezone", "UTC"), **extra)
    for class_name, kind_type in types.items():
        # Handlers are keyed by kind (one queue each); a job of the kind completes at once.
        @client.task(kind_type, queue=queue_of[class_name])
        async def _done(job: object) -> None:
            return None

    await client.start([tuple(q) for q in spec["queues"]], leader_election_interval_ms=spec.get("leader_ms", 200))
    emit("started")
    # Run until the driver closes stdin (EOF), then stop cleanly.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await client.shutdown(timeout_ms=2000)
    emit("stopped")


def main(argv: list[str]) -> int:
    try:
        if argv[0] == "migrate":
            asyncio.run(migrate(argv[1]))
        elif argv[0] == "run":
            asyncio.run(run(argv[1], json.loads(argv[2])))
        else:
            emit("error", message=f"unknown command {argv[0]!r}")
            return 2
    except Exception as exc:  # reported to the driver as an event, then a non-zero exit
        emit("error", message=f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    # Skip interpreter finalisation: some awa-pg releases (0.5.7) abort in it while their
    # runtime threads still hold the GIL state, turning a finished run into a crash.
    os._exit(code)
