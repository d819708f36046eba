"""The previous release's runtime beside this one's, through migrate, roll forward and roll
back, as docs/operations.md ("Upgrading") tells an operator to do it.

Both releases run the same app (rolling_app.py: one per-second schedule that catches up every
instant it missed). The oracle is this test's own SQL over awa.jobs: every instant from the
first fire to the last fired exactly once (0 lost, 0 doubled), whichever release led, and
after the migration no term of the leader lease went to the previous release until the
rollback let it lead again."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import awa_tui
from awa_tui.engine.migrations import code_version

from .previous_release import previous_release

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _cli_helpers() -> Any:
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "cli"))
    import cli_helpers

    return cli_helpers


@pytest.fixture
def db(empty_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(empty_dsn, autocommit=True, row_factory=dict_row) as conn:
        yield conn


def test_the_previous_release_beside_this_one_through_migrate_roll_forward_and_roll_back(
    empty_dsn: str, db: psycopg.Connection[Any], tmp_path: Path
) -> None:
    from helpers import wait_for

    helpers = _cli_helpers()
    old, new = [str(previous_release())], helpers.COMMAND
    env = helpers.cli_env(PYTHONPATH=str(HERE))
    processes: list[subprocess.Popen[bytes]] = []

    def run(command: list[str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*command, *args, "--dsn", empty_dsn], capture_output=True, text=True, env=env,
                              timeout=120, stdin=subprocess.DEVNULL)

    def spawn(command: list[str], name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"{name}.log", "w")
        process = subprocess.Popen([*command, "run", "--app", "rolling_app:setup", "--dsn", empty_dsn, *args],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        log.close()
        processes.append(process)
        return process

    def instance_of(process: subprocess.Popen[bytes]) -> Any:
        row = wait_for(lambda: db.execute("SELECT instance_id FROM awa.runtime_instances WHERE pid = %s",
                                          (process.pid,)).fetchone(), timeout=60, what="its snapshot")
        return row["instance_id"]

    def leads(process: subprocess.Popen[bytes]) -> None:
        instance = instance_of(process)
        wait_for(lambda: db.execute("SELECT 1 FROM awa.leader_lease WHERE instance_id = %s AND expires_at > now()",
                                    (instance,)).fetchone(), timeout=60, what=f"pid {process.pid} to lead")

    def fires() -> int:
        return db.execute("SELECT count(*) AS n FROM awa.jobs WHERE kind = 'rolling.tick'").fetchone()["n"]

    def more_fires(n: int = 3) -> None:
        start = fires()
        wait_for(lambda: fires() >= start + n, timeout=60, what=f"{n} more fires")

    def stop(process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0

    try:
        # The previous release's schema, made by its own migrate; its runtime leads.
        assert run(old, "migrate").returncode == 0
        old1 = spawn(old, "old1")
        leads(old1)
        more_fires()
        # 1. Migrate with this release (a deploy step of its own), the previous one running.
        migrated = run(new, "migrate")
        # Every migration after the previous release's last (v018), in order.
        newer = [f"v{v:03d}" for v in range(19, code_version() + 1)]
        assert (migrated.returncode, migrated.stdout) == (0, f"applied {', '.join(newer)}\n"), migrated.stderr
        migrated_at = db.execute("SELECT now() AS t").fetchone()["t"]
        # 2. This release's runtimes start without migrating: the previous one steps aside.
        new1 = spawn(new, "new1", "--no-migrate")
        leads(new1)
        more_fires()
        assert old1.poll() is None  # still running, still working
        old_instance = instance_of(old1)
        taken = db.execute("SELECT count(*) AS n FROM awa.leader_terms WHERE instance_id = %s AND acquired_at > %s",
                           (old_instance, migrated_at)).fetchone()["n"]
        assert taken == 0  # the previous release never led on the new schema
        checked = run(new, "check").stdout.splitlines()
        assert (f"WARNING fleet schema_overlap: rolling deploy: awa-tui 0.1.0 (schema 18) still running beside "
                f"awa-tui {awa_tui.__version__} on schema {code_version()}; older runtimes do not lead") in checked
        assert not [line for line in checked if line.startswith("CRITICAL fleet")]
        # 3. Roll forward: the previous release's runtime goes.
        stop(old1)
        more_fires()
        # 4. Roll back, as documented: undo v019 and later while this release still leads, start the
        # previous release, then stop this one.
        undone = run(new, "migrate", "--down-to", "18")
        assert (undone.returncode, undone.stdout) == (0, f"undone {', '.join(reversed(newer))}\n"), undone.stderr
        more_fires()
        old2 = spawn(old, "old2")
        instance_of(old2)
        stop(new1)
        leads(old2)
        more_fires()
        stop(old2)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    rows = db.execute(
        "SELECT (metadata->>'cron_fire_time')::timestamptz AS at, count(*) AS n FROM awa.jobs "
        "WHERE kind = 'rolling.tick' GROUP BY 1 ORDER BY 1").fetchall()
    doubled = [r["at"] for r in rows if r["n"] != 1]
    instants = [r["at"] for r in rows]
    expected = [instants[0] + timedelta(seconds=i)
                for i in range(int((instants[-1] - instants[0]).total_seconds()) + 1)]
    lost = sorted(set(expected) - set(instants))
    assert (doubled, lost) == ([], []), (tmp_path, doubled, lost)
    assert len(instants) >= 15
