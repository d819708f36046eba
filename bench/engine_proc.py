"""awa-tui runtimes in their own processes (kill -9 and cold starts need a real process).

Two ways in, both registering the same N schedules (`setup`):

    python -m bench.engine_proc N APPLICATION_NAME          # failover: one named runtime
    python -m awa_tui run --app bench.engine_proc:setup     # cold start: the product's own CLI

The DSN comes from AWA_DATABASE_URL (the environment, not argv: `ps` shows argv, and an
external server's DSN may carry a password). `setup` reads the schedule count, expression
and missed-fire policy from AWA_BENCH_N, AWA_BENCH_EXPR and AWA_BENCH_POLICY.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from bench.common import BENCH_KIND, BENCH_QUEUE

ENV_N, ENV_EXPR, ENV_POLICY = "AWA_BENCH_N", "AWA_BENCH_EXPR", "AWA_BENCH_POLICY"


def register(client: Any, n: int, expr: str, policy: str) -> None:
    for i in range(1, n + 1):
        client.periodic(f"bench-{i:06d}", expr, BENCH_KIND, None, queue=BENCH_QUEUE, missed_fire_policy=policy)


def setup(client: Any) -> None:
    """The `--app` entry point for `python -m awa_tui run`."""
    register(client, int(os.environ[ENV_N]), os.environ.get(ENV_EXPR, "* * * * * *"),
             os.environ.get(ENV_POLICY, "coalesce"))


def main(argv: list[str]) -> int:
    from awa_tui import Client

    n, name = int(argv[0]), argv[1]
    logging.basicConfig(level=logging.ERROR)
    client = Client(os.environ["AWA_DATABASE_URL"], application_name=name, operator="bench")
    register(client, n, "* * * * * *", "coalesce")
    print(json.dumps({"pid": os.getpid(), "name": name}), flush=True)
    client.run()  # until SIGTERM (or SIGKILL, which is the point)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
