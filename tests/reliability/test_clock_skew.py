"""A runtime whose host clock is five minutes fast (S59, S9): it runs under faketime, and
still fires every instant on database time, once, and the lateness the ledger and its
snapshot report is database-time lateness (well under a second), not the host's five
minutes. The control: faketime really took effect in the child (its log's clock is five
minutes ahead of the database's)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers import wait_for

from awa_tui import Client
from awa_tui.engine.read.passes import from_json

from .harness import Summary, caught_up, check_fires, connect, db_now, fleet, install_job_origin, pause, settle

pytestmark = pytest.mark.slow

SCHEDULES = 5
SKEW = timedelta(minutes=5)
RUN_S = 6.0


def test_a_runtime_five_minutes_fast_fires_on_database_time(dsn: str, log_dir: Path, summary: Summary) -> None:
    faketime = shutil.which("faketime")
    assert faketime, "faketime is missing: `make test-tools` installs it"
    conn = connect(dsn)
    install_job_origin(conn)
    with fleet(dsn, log_dir, count=SCHEDULES) as f:
        # A host whose wall clock is wrong still has a true monotonic clock: faketime is
        # told to leave it alone (faked too, every timed wait of the child, which the kernel
        # counts on the real one, would last five minutes longer).
        runtime = f.spawn(wrapper=[faketime, "-f", "+5m"], env={"FAKETIME_DONT_FAKE_MONOTONIC": "1"})
        settle(conn, f.names)
        # The control: the child's clock is the faked one. Its log stamps the moment it
        # became leader; the lease row stamps the same moment in DB time.
        line = next(x for x in runtime.log().splitlines() if "became leader" in x)
        child_clock = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
        acquired = conn.execute("SELECT acquired_at FROM awa.leader_lease").fetchone()["acquired_at"]
        host_ahead = (child_clock - acquired.replace(tzinfo=None)).total_seconds()
        assert abs(host_ahead - SKEW.total_seconds()) < 2.0, host_ahead
        began = db_now(conn)
        pause(RUN_S)
        end = db_now(conn)
        wait_for(lambda: caught_up(conn, f.names, end), 30, what="every schedule caught up")
        passes = wait_for(lambda: from_json(conn.execute(
            "SELECT recent_passes FROM awa.runtime_instances WHERE stopped_at IS NULL").fetchone()["recent_passes"]),
            10, what="the runtime's passes in its snapshot")
        statuses = f.stop_all()
        problems = f.problems()
    check = check_fires(conn, f.names, f.expr, end)
    # Lateness as the ledger reports it, for the instants of the run.
    client = Client(dsn, read_only=True)
    try:
        verdicts = [v for n in f.names for v in client.reads.ledger(n, since=began, until=end, limit=100)]
    finally:
        client.close()
    fired = [v for v in verdicts if v.verdict == "fired"]
    late = [v.lateness_s for v in fired if v.lateness_s is not None]
    # The snapshot's passes carry DB time (the pass's `now`), not the host's.
    pass_offsets = [abs((p.at - end).total_seconds()) for p in passes]
    summary.runs = 1
    summary.count(check)
    summary.notes = (f"host clock +{SKEW.total_seconds():.0f} s (faketime, child {host_ahead:.1f} s ahead): "
                     f"{len(fired)} fires, lateness max {max(late):.2f} s by DB time")
    summary.extra = {"host_ahead_s": host_ahead, "max_lateness_s": max(late)}
    assert check.ok, check.describe()
    assert len(fired) >= SCHEDULES * (RUN_S - 1) and len(late) == len(fired)
    assert all(0 <= s < 1.5 for s in late), late  # not -300 s, not +300 s
    assert max(pass_offsets) < 30, pass_offsets  # DB time: seconds before the end, not minutes away
    assert set(statuses.values()) == {0}, f.logs()
    assert not problems, "\n".join(problems)
