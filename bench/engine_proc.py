"""One awa-tui runtime in its own process, for the failover benchmark (kill -9 needs a pid).

    python -m bench.engine_proc DSN N APPLICATION_NAME
"""

from __future__ import annotations

import json
import logging
import os
import sys

from awa_tui import Client
from bench.common import BENCH_KIND, BENCH_QUEUE


def main(argv: list[str]) -> int:
    dsn, n, name = argv[0], int(argv[1]), argv[2]
    logging.basicConfig(level=logging.ERROR)
    client = Client(dsn, application_name=name, operator="bench")
    for i in range(1, n + 1):
        client.periodic(f"bench-{i:06d}", "* * * * * *", BENCH_KIND, None, queue=BENCH_QUEUE)
    print(json.dumps({"pid": os.getpid(), "name": name}), flush=True)
    client.run()  # until SIGTERM (or SIGKILL, which is the point)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
