"""What blocks the leader's pass (S59): the sessions holding the locks its statements wait
for, read on another connection while the pass is still waiting.

Once a statement has given up on its lock timeout the wait is over and Postgres no longer
says who was in the way, so a watcher looks while the pass runs: when a pass is still
running half a lock timeout after it began, it asks pg_blocking_pids about the pass's
backends (and again every half lock timeout while it lasts). A healthy pass ends before
that and costs two Event calls. What another session runs is anyone's SQL, secrets
included: only its kind (`ALTER ROLE`, `UPDATE awa.cron_jobs`) is kept, logged or shown.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from awa_tui.engine.read.fleet import Blocker, HeldLock, ReadWait
from awa_tui.engine.read.statement_kind import statement_kind
from awa_tui.printable import printable, printable_logger

if TYPE_CHECKING:
    from awa_tui.engine.core.db import ConnectionSource

log = printable_logger("awa_tui.runtime")

QUERY_CHARS = 400  # of a blocker's statement read to tell its kind (the text itself is never kept)
# Postgres's lock modes, weakest first: of those a blocker holds on what is waited for, the
# strongest is named (it is the one in the way).
MODES = ["AccessShareLock", "RowShareLock", "RowExclusiveLock", "ShareUpdateExclusiveLock", "ShareLock",
         "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"]

BLOCKERS_SQL = """
WITH waiting AS (SELECT unnest(%(pids)s::int[]) AS pid)
SELECT b.pid, coalesce(b.usename::text, '') AS "user", coalesce(b.application_name, '') AS application,
       coalesce(b.state, '') AS state,
       left(coalesce(b.query, ''), %(chars)s) AS query,
       coalesce((SELECT string_agg(DISTINCT CASE WHEN l.relation IS NOT NULL THEN 'table ' || l.relation::regclass
                                                 WHEN l.locktype = 'tuple' THEN 'a row'
                                                 ELSE 'a ' || l.locktype END, ', ')
                 FROM pg_locks l JOIN waiting w ON w.pid = l.pid WHERE NOT l.granted), '') AS waited_for,
       coalesce((SELECT h.mode
                 FROM pg_locks l JOIN waiting w ON w.pid = l.pid AND NOT l.granted
                 JOIN pg_locks h ON h.pid = b.pid AND h.locktype = l.locktype
                  AND h.database IS NOT DISTINCT FROM l.database AND h.relation IS NOT DISTINCT FROM l.relation
                  AND h.page IS NOT DISTINCT FROM l.page AND h.tuple IS NOT DISTINCT FROM l.tuple
                  AND h.virtualxid IS NOT DISTINCT FROM l.virtualxid
                  AND h.transactionid IS NOT DISTINCT FROM l.transactionid
                  AND h.classid IS NOT DISTINCT FROM l.classid AND h.objid IS NOT DISTINCT FROM l.objid
                  AND h.objsubid IS NOT DISTINCT FROM l.objsubid
                 ORDER BY array_position(%(modes)s::text[], h.mode) DESC NULLS LAST LIMIT 1), '') AS mode
FROM pg_stat_activity b
WHERE b.pid IN (SELECT unnest(pg_blocking_pids(w.pid)) FROM waiting w)
ORDER BY b.pid
"""


def _rows(conn: psycopg.Connection[Any], pids: list[int]) -> list[dict[str, Any]]:
    return conn.execute(BLOCKERS_SQL, {"pids": pids, "chars": QUERY_CHARS, "modes": MODES}).fetchall()


def _blocker(row: dict[str, Any]) -> Blocker:
    return Blocker(pid=row["pid"], user=printable(row["user"]), application=printable(row["application"]),
                   state=printable(row["state"]), kind=statement_kind(row["query"]),
                   waited_for=printable(row["waited_for"]))


def read_blockers(conn: psycopg.Connection[Any], pids: list[int]) -> tuple[Blocker, ...]:
    """The sessions that block any of `pids` now (pg_blocking_pids), printable; of their
    statements only the kind."""
    return tuple(_blocker(r) for r in _rows(conn, pids))


def mode_words(mode: str) -> str:
    """'AccessExclusiveLock' -> 'ACCESS EXCLUSIVE' (the words of LOCK TABLE ... IN ... MODE)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", mode.removesuffix("Lock")).upper()


def thread_wait(db: ConnectionSource, thread_id: int, bound: timedelta) -> ReadWait | None:
    """What the statement thread `thread_id` runs on `db` waits on (None: it holds no connection now)."""
    pid = db.busy_pid(thread_id)
    return None if pid is None else read_wait(db, pid, bound)


def read_wait(db: ConnectionSource, pid: int, bound: timedelta) -> ReadWait:
    """What the session `pid` waits on now, read on another connection of `db` within `bound`
    (lock and statement timeouts, SET LOCAL: a pooler lends the session to nobody else's
    settings). The blockers of a console's stuck refresh (S75): the same read as a pass's."""
    ms = f"{max(1, int(bound.total_seconds() * 1000))}ms"
    with db.transaction() as conn:
        conn.execute("SELECT set_config('lock_timeout', %(ms)s, true), "
                     "set_config('statement_timeout', %(ms)s, true)", {"ms": ms})
        rows = _rows(conn, [pid])
    return ReadWait(pid, tuple(HeldLock(_blocker(r), mode_words(r["mode"])) for r in rows))


class PassWatch:
    """Samples the blockers of the pass in progress (begin/add/end on the evaluator's
    thread; the sampling on a daemon thread of its own, made at the first pass)."""

    def __init__(self, sample: Callable[[list[int]], tuple[Blocker, ...]], after_s: float) -> None:
        self.sample = sample
        self.after_s = after_s
        self._lock = threading.Lock()
        self._pids: list[int] = []
        self._found: tuple[Blocker, ...] = ()
        self._generation = 0
        self._began = threading.Event()
        self._ended = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def begin(self, pid: int) -> None:
        with self._lock:
            self._generation += 1
            self._pids, self._found = [pid], ()
            self._ended.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="awa-pass-watch", daemon=True)
            self._thread.start()
        self._began.set()

    def add(self, pid: int) -> None:
        """Another connection of the same pass (the second chunk in flight)."""
        with self._lock:
            self._pids.append(pid)

    def end(self) -> tuple[Blocker, ...]:
        """The pass is over: what it was seen waiting on (empty: it never waited long)."""
        with self._lock:
            self._ended.set()
            return self._found

    def close(self) -> None:
        """End the sampling thread (the client is closing)."""
        self._closed = True
        self._ended.set()
        self._began.set()

    def _run(self) -> None:
        while True:
            self._began.wait()
            self._began.clear()
            if self._closed:
                return
            with self._lock:
                generation = self._generation
            while not self._ended.wait(self.after_s):
                with self._lock:
                    if generation != self._generation:
                        break  # a newer pass began: its own round
                    pids = list(self._pids)
                try:
                    found = self.sample(pids)
                except Exception as exc:  # a diagnosis only: the pass reports its timeout anyway
                    log.debug("could not read what blocks the pass: %s", exc)
                    continue
                with self._lock:
                    if found and generation == self._generation:
                        self._found = found


def watch(db: ConnectionSource, lock_timeout: timedelta) -> PassWatch:
    """Who blocks a client's pass that waits (S59), read on a connection of its own once
    the pass has waited half its lock timeout."""

    def sample(pids: list[int]) -> tuple[Blocker, ...]:
        with db.connection() as conn:
            return read_blockers(conn, pids)

    return PassWatch(sample, after_s=lock_timeout.total_seconds() / 2)
