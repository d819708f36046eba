"""`awa-tui run` under repeated signals, and the console where there is no terminal.

A second signal during the clean stop (`timeout`'s follow-up, a double Ctrl-C) must not cut
it short; a third forces the stop. Either way the runtime's row says stopped at once, never
left fresh for other runtimes and `check` to count until it goes stale."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import COMMAND, awa, cli_env, one_line_error
from helpers import wait_for

OFF_PORT_DSN = "postgresql://app@127.0.0.1:1/db"  # never reached: refused before connecting


def _running(conn: psycopg.Connection[Any], dsn: str, log_path: Path) -> subprocess.Popen[bytes]:
    """`awa-tui run` of the one-schedule test app, once it leads and has fired."""
    log = open(log_path, "w")
    process = subprocess.Popen([*COMMAND, "run", "--app", "cli_app:setup", "--dsn", dsn], stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=cli_env())
    log.close()
    wait_for(lambda: conn.execute("SELECT 1 FROM awa.jobs WHERE kind = 'cli.tick'").fetchone(), timeout=20,
             what="the first fire")
    return process


def _row(conn: psycopg.Connection[Any], pid: int) -> dict[str, Any]:
    rows = conn.execute("SELECT health, is_leader, stopped_at FROM awa.runtime_instances WHERE pid = %s",
                        (pid,)).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def _stop(process: subprocess.Popen[bytes], *signals: signal.Signals) -> int:
    try:
        for sig in signals:
            process.send_signal(sig)
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_second_signal_does_not_cut_the_clean_stop_short(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    log_path = tmp_path / "run.log"
    process = _running(conn, dsn, log_path)
    # Two different signals, so neither can be merged into the other by the kernel.
    assert _stop(process, signal.SIGTERM, signal.SIGINT) == 0, log_path.read_text()
    output = log_path.read_text()
    # It did arrive (pending signals are handled in signal-number order: either may be second).
    assert re.search(r"WARNING awa_tui.runtime: SIG(INT|TERM): already stopping cleanly; running jobs are "
                     r"released now \(a third signal forces the stop\)\n", output), output
    assert "stopped cleanly (leader lock released)" in output
    assert "Traceback" not in output and "forced" not in output
    row = _row(conn, process.pid)
    assert (row["health"], row["is_leader"]) == ("stopped", False) and row["stopped_at"] is not None


def test_a_third_signal_forces_the_stop_and_the_row_still_says_stopped(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    log_path = tmp_path / "run.log"
    process = _running(conn, dsn, log_path)
    assert _stop(process, signal.SIGTERM, signal.SIGINT, signal.SIGHUP) == 130, log_path.read_text()
    output = log_path.read_text()
    assert re.search(r"WARNING awa_tui.runtime: SIG(HUP|INT|TERM): forced stop, the runtime marked stopped\n",
                     output), output
    assert "stopped cleanly" not in output  # the clean stop did not finish: the forced mark is what says stopped
    assert output.rstrip().splitlines()[-1] == "error: interrupted"
    assert "Traceback" not in output
    row = _row(conn, process.pid)
    assert (row["health"], row["is_leader"]) == ("stopped", False) and row["stopped_at"] is not None
    locks = conn.execute("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' "
                         "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())").fetchone()
    assert locks == {"n": 0}  # the leader lock went with the process's sessions


NO_TERMINAL = ("error: the console needs a terminal and this has none: run the scheduler headless with "
               "`awa-tui run`, or a subcommand (`awa-tui --help` lists them: cron, jobs, check, migrate ...)")


@pytest.mark.parametrize("args", [(), ("--lead", "--demo")])
def test_the_console_without_a_terminal_refuses_in_one_line(args: tuple[str, ...]) -> None:
    result = awa(*args, "--dsn", OFF_PORT_DSN)  # stdin from /dev/null, stdout a pipe
    assert result.returncode == 2
    assert one_line_error(result) == NO_TERMINAL


def test_options_are_still_checked_before_the_terminal() -> None:
    result = awa("--read-only", "--lead", "--dsn", OFF_PORT_DSN)
    assert one_line_error(result) == (
        "error: --read-only and --lead: a read-only console cannot run the engine, which writes; drop one")
