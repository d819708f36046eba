"""Procrastinate's worker, timed the way bench/worker_throughput.py times ours: N no-op async
jobs deferred first, then one worker at CONCURRENCY drains them (wait=False: it returns once
caught up). Runs in bench/.venv-procrastinate (procrastinate only, never beside the product).

    python procrastinate_side.py DSN N CONCURRENCY   -> one JSON line: {"seconds": ..., "jobs": N}
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import procrastinate


async def main(dsn: str, n: int, concurrency: int) -> None:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))

    @app.task(name="noop")
    async def noop(i: int) -> None:
        return None

    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, n, 1000):
            await noop.batch_defer_async(*({"i": i} for i in range(start, min(start + 1000, n))))
        began = time.perf_counter()
        await app.run_worker_async(concurrency=concurrency, wait=False, install_signal_handlers=False,
                                   listen_notify=False)
        seconds = time.perf_counter() - began
    print(json.dumps({"seconds": seconds, "jobs": n, "version": procrastinate.__version__}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
