"""A runtime the CLI cannot start: an authoritative owner's (`python -m reliability.runner
DSN OWNER GRACE_S`), with the schedules of reliability.app. SIGTERM stops it cleanly."""

from __future__ import annotations

import logging
import sys
from datetime import timedelta

from awa_tui import Client

from . import app


def main(dsn: str, owner: str, grace_s: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    client = Client(dsn, owner=owner, authoritative=True, retire_grace=timedelta(seconds=float(grace_s)),
                    snapshot_interval=timedelta(seconds=1), operator="reliability",
                    application_name="rel-runner")
    app.setup(client)
    client.run()
    logging.getLogger("awa_tui").info("stopped cleanly (leader lock released)")


if __name__ == "__main__":
    main(*sys.argv[1:])
