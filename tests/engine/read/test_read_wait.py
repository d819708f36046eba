"""What a client's statement waits on, read on a second connection (S75): the pid of the
session each thread's statement runs on is known to the connection source, and the read of
its blockers names the session in the way, its lock mode and table, and its statement's
kind only. The oracle is the test's own locking session."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import psycopg
from helpers import wait_for

from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.read.blockers import mode_words, thread_wait
from awa_tui.engine.read.fleet import Blocker, HeldLock, ReadWait

BOUND = timedelta(seconds=2)


def test_a_blocked_threads_wait_names_the_holder_its_mode_and_table(dsn: str, conn: Any) -> None:
    source = ConnectionSource(dsn, "awa-tui reader")
    started: list[int] = []
    done = threading.Event()

    def blocked_read() -> None:
        started.append(threading.get_ident())
        with source.connection() as c:
            c.execute("SELECT count(*) FROM awa.cron_jobs").fetchone()
        done.set()

    try:
        with psycopg.connect(dsn, application_name="migration") as locker:
            locker.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
            # Its last statement carries a literal: only its kind may come out. It holds ROW
            # EXCLUSIVE too: the strongest of its modes is named.
            locker.execute("""UPDATE awa.cron_jobs SET args = '{"token": "s3cret"}' WHERE name = 'none'""")
            reader = threading.Thread(target=blocked_read, daemon=True)
            reader.start()
            wait_for(lambda: conn.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = "
                                          "'awa-tui reader' AND wait_event_type = 'Lock'").fetchone(),
                     what="the read waiting on its lock")
            waiter = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'awa-tui reader' "
                                  "AND wait_event_type = 'Lock'").fetchone()["pid"]
            assert source.busy_pid(started[0]) == waiter
            found = thread_wait(source, started[0], BOUND)
            assert found == ReadWait(waiter, (HeldLock(Blocker(
                pid=locker.info.backend_pid, user="postgres", application="migration", state="idle in transaction",
                kind="UPDATE awa.cron_jobs", waited_for="table awa.cron_jobs"), "ACCESS EXCLUSIVE"),))
            assert "s3cret" not in repr(found)
            locker.rollback()
        assert done.wait(10)
        # Its statement answered: the thread holds no connection, there is nothing to read.
        assert source.busy_pid(started[0]) is None
        assert thread_wait(source, started[0], BOUND) is None
    finally:
        source.close_all()


def test_mode_words() -> None:
    assert mode_words("AccessExclusiveLock") == "ACCESS EXCLUSIVE"
    assert mode_words("ShareUpdateExclusiveLock") == "SHARE UPDATE EXCLUSIVE"
    assert mode_words("") == ""
