"""`check` within a bound. A health check that waits on a lock (another session holding
awa.cron_jobs ACCESS EXCLUSIVE: a migration, a hand-run LOCK TABLE) waited as long as the
lock was held, then reported a state that was gone. Here every statement of the check runs
under a lock timeout and a statement timeout of the bound (SET LOCAL: a pooler lends the
session to nobody else's settings); one that gives up makes the check unable to tell,
naming the session in the way (read on a second connection while the check waits)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.health.check import check
from awa_tui.engine.read import blockers
from awa_tui.engine.read.fleet import describe

if TYPE_CHECKING:
    from awa_tui.engine.core.db import ConnectionSource
    from awa_tui.engine.health.models import CheckReport


class CheckTimedOut(AwaError):
    """The check could not read within its bound: it cannot tell (exit 3)."""


def check_within(db: ConnectionSource, timeout: timedelta, *, owner: str | None = None,
                 schedule: str | None = None, tag: str | None = None, now: datetime | None = None) -> CheckReport:
    seconds = timeout.total_seconds()
    watch = blockers.watch(db, timeout)  # samples the waiting check at half the bound
    try:
        with db.connection() as conn:
            try:
                with conn.transaction():
                    ms = f"{max(1, int(seconds * 1000))}ms"
                    conn.execute("SELECT set_config('lock_timeout', %(ms)s, true), "
                                 "set_config('statement_timeout', %(ms)s, true)", {"ms": ms})
                    watch.begin(conn.info.backend_pid)
                    return check(conn, owner=owner, schedule=schedule, tag=tag, now=now)
            except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled) as exc:
                raise CheckTimedOut(_why(seconds, watch.end(), exc)) from None
    finally:
        watch.close()


def _why(seconds: float, found: tuple[Any, ...], exc: psycopg.Error) -> str:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    blocked = f"blocked by {describe(found)}" if found else f"the database said: {first}"
    return f"could not read the schedules' health within {seconds:g} s ({blocked}); --timeout sets the bound"
