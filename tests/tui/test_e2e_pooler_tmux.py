"""The console in a real terminal (tmux), for what only a real terminal shows: `awa-tui --lead`
behind a transaction pooler says for as long as it runs that it does not lead and why, and
exits on SIGTERM, SIGINT and a lost terminal even when the pooler has no server session to
give; keys sent in one write after `/` are filter text (with the `/` binding made a
non-priority one again, as before, this test fails: the burst reaches the list)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import wait_for
from psycopg.conninfo import conninfo_to_dict
from reliability.pgbouncer import PgBouncer, pgbouncer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_e2e_tmux import AWA, Terminal

from awa_tui.tui.launch import STOP_BOUND_S


@pytest.fixture
def term() -> Iterator[Terminal]:
    made = Terminal()
    yield made
    made.kill()


POOL_SIZE = 10


@pytest.fixture
def bouncer(pg_admin_dsn: str, tmp_path: Path) -> Iterator[PgBouncer]:
    with pgbouncer(pg_admin_dsn, "transaction", tmp_path, pool_size=POOL_SIZE) as b:
        yield b


def pooled_console(bouncer: PgBouncer, dsn: str) -> list[str]:
    return [AWA, "--lead", "--demo", "--dsn", bouncer.dsn(str(conninfo_to_dict(dsn)["dbname"])),
            "--operator", "e2e@tmux"]


def gone(pid: int) -> bool:
    """The process has exited: no such pid, or a zombie (tmux, keeping the dead pane with
    remain-on-exit, does not always reap its child at once; a zombie runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def pane_pid(term: Terminal) -> int:
    return int(term.tmux("display-message", "-p", "-t", term.session, "#{pane_pid}"))


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "terminal lost (SIGHUP)"])
def test_a_lead_console_behind_a_transaction_pooler_says_it_does_not_lead_and_exits(term, dsn, bouncer, how):
    term.start(pooled_console(bouncer, dsn))
    screen = term.wait_screen("NOT LEADING", timeout=30)
    print(screen)
    pid = pane_pid(term)
    if how == "terminal lost (SIGHUP)":
        term.kill()
    else:
        os.kill(pid, getattr(signal, how))

    wait_for(lambda: gone(pid), timeout=STOP_BOUND_S + 15, what=f"the console to exit on {how}")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "terminal lost (SIGHUP)"])
def test_it_exits_while_every_pooled_server_session_is_taken(term, dsn, bouncer, how):
    """The pooler's server sessions all held by stuck transactions (frozen runtimes): the
    console's own statements wait in the pooler's queue, and it still exits when told."""
    term.start(pooled_console(bouncer, dsn))
    term.wait_screen("NOT LEADING", timeout=30)
    pooled = bouncer.dsn(str(conninfo_to_dict(dsn)["dbname"]))
    holders = [psycopg.connect(pooled, prepare_threshold=None) for _ in range(POOL_SIZE)]
    try:
        for c in holders:
            c.execute("SELECT 1")  # a transaction left open: the server session stays taken
        term.wait_screen("STALE", timeout=30)  # its reads are stuck in the pooler's queue
        pid = pane_pid(term)
        if how == "terminal lost (SIGHUP)":
            term.kill()
        else:
            os.kill(pid, getattr(signal, how))
        wait_for(lambda: gone(pid), timeout=STOP_BOUND_S + 15, what=f"the console to exit on {how}")
    finally:
        for c in holders:
            c.close()


def test_a_burst_after_slash_in_a_real_terminal_is_filter_text(term, dsn):
    """`/a` and `/state:paused` + enter sent in one write (tmux send-keys: as a paste or a
    lagged SSH link delivers them): no dialog opens, the text is the filter."""
    term.start([AWA, "--lead", "--demo", "--dsn", dsn, "--operator", "e2e@tmux"])
    term.wait_screen("demo.heartbeat", timeout=30)
    term.keys("/a")
    screen = term.wait_screen("filter: a", timeout=10)
    assert "Transfer schedule?" not in screen and "Adopt schedule?" not in screen
    term.keys("Escape")
    wait_for(lambda: "filter:" not in term.screen(), timeout=10, what="the filter cleared")
    term.keys("/state:paused", "Enter")
    screen = term.wait_screen("filter: state:paused", timeout=10)
    for dialog in ("Pause schedule?", "Trigger", "Transfer schedule?", "Override"):
        assert dialog not in screen, dialog


def test_check_on_a_terminal_says_unknown_once(term, empty_dsn):
    """On one terminal the UNKNOWN line is not repeated as an error line (piped, both stay:
    the status on stdout for a monitoring system, the error on stderr)."""
    term.start([AWA, "check", "--dsn", empty_dsn])
    wait_for(term.dead, timeout=30, what="check to finish")
    lines = [line for line in term.history().splitlines() if "no awa schema" in line]
    assert lines == ["UNKNOWN: the database has no awa schema; run `awa-tui migrate`"]
