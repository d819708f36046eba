"""The upstream engine's side of the comparison; runs in bench/.venv-awa-pg, never in ours.

It imports only the standard library and `awa` (the awa-pg package), so it must not import
anything from awa_tui or bench. One JSON object per line on stdout tells the driver what
happened and when (time.time() stamps).

    python awa_pg_side.py migrate URL
    python awa_pg_side.py run URL --n N --expr EXPR --policy P --seconds S
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import resource
import sys
import time

import awa


@dataclasses.dataclass
class Tick:
    """No fields: the job args are {} and the kind is 'tick', as in the seeded rows."""


def emit(event: str, **data: object) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"event": event, "t": time.time(), "cpu_s": usage.ru_utime + usage.ru_stime, **data}),
          flush=True)


async def migrate(url: str) -> None:
    client = awa.AsyncClient(url)
    await client.migrate()
    emit("migrated")


async def run(url: str, n: int, expr: str, policy: str, seconds: float, leader_ms: int) -> None:
    client = awa.AsyncClient(url)
    began = time.perf_counter()
    for i in range(1, n + 1):
        client.periodic(f"bench-{i:06d}", expr, Tick, Tick(), queue="cronq", missed_fire_policy=policy)
    emit("registered", seconds=time.perf_counter() - began)

    # A runtime needs a worker; it serves another queue so fired jobs stay where they land.
    @client.task(Tick, kind="idle_tick", queue="idle")
    async def _idle(job: object) -> None:
        return None

    began = time.perf_counter()
    await client.start([("idle", 1)], leader_election_interval_ms=leader_ms)
    emit("started", seconds=time.perf_counter() - began)
    await asyncio.sleep(seconds)
    emit("stopping")
    await client.shutdown(timeout_ms=2000)
    emit("stopped")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_migrate = sub.add_parser("migrate")
    p_migrate.add_argument("url")
    p_run = sub.add_parser("run")
    p_run.add_argument("url")
    p_run.add_argument("--n", type=int, required=True)
    p_run.add_argument("--expr", required=True)
    p_run.add_argument("--policy", default="coalesce")
    p_run.add_argument("--seconds", type=float, required=True)
    p_run.add_argument("--leader-ms", type=int, default=500)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "migrate":
            asyncio.run(migrate(args.url))
        else:
            asyncio.run(run(args.url, args.n, args.expr, args.policy, args.seconds, args.leader_ms))
    except Exception as exc:  # report, don't crash the driver
        emit("error", message=f"{type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
