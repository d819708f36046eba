"""The schedules' last page (the console's G): the last rows of the page's order, read in
one statement whatever lies between."""

from __future__ import annotations

from typing import Any

import psycopg

from awa_tui import Client


def test_schedules_last_page_is_the_tail_of_every_order(client: Client, conn: psycopg.Connection[Any]) -> None:
    """For every sort, both ways: the last page is the last rows of the whole order, NULLs
    (never fired, no owner...) placed as the whole order places them (last)."""
    from awa_tui.engine.read.views import SCHEDULE_SORTS

    for n in range(7):
        client.periodic(f"s{n}", f"{n} * * * *", "test.job", queue=f"q{n % 3}")
    client.sync()
    with conn.transaction():  # some fired, some not: NULLs in `last` (written past the fence, as a dump would)
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = now() - (substr(name, 2)::int * interval '1 hour') "
                     "WHERE name IN ('s1', 's4', 's5')")
    for sort in SCHEDULE_SORTS:
        for descending in (False, True):
            whole = [r.name for r in client.reads.schedule_page(sort=sort, descending=descending, limit=100).rows]
            assert len(whole) == 7
            last = client.reads.schedule_page(sort=sort, descending=descending, limit=3, from_end=True)
            assert ([r.name for r in last.rows], last.from_end, last.matched) == (whole[-3:], True, 7), (
                sort, descending)
