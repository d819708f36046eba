"""The last page of a paged list (the console's G): the oldest `limit` jobs or audit
entries, newest first like every page, read in one statement whatever lies between."""

from __future__ import annotations

from typing import Any

import psycopg
from engine_helpers import seed_jobs

from awa_tui import Client
from awa_tui.filters import parse


def test_jobs_oldest_page(client: Client, conn: psycopg.Connection[Any]) -> None:
    ids = seed_jobs(conn, 9, kind="test.job", queue="alpha") + seed_jobs(conn, 3, kind="test.job", queue="beta")
    newest = client.reads.jobs_page(limit=4)
    assert ([j.id for j in newest.rows], newest.more, newest.oldest) == (ids[::-1][:4], True, False)
    oldest = client.reads.jobs_page(limit=4, oldest=True)
    assert ([j.id for j in oldest.rows], oldest.more, oldest.oldest) == (ids[:4][::-1], True, True)
    # Filtered, and a last page that holds every match: nothing newer beyond it.
    beta = client.reads.jobs_page(parse("queue:beta", "jobs"), limit=4, oldest=True)
    assert ([j.id for j in beta.rows], beta.more) == (ids[9:][::-1], False)


def test_audit_oldest_page(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("alpha", "0 * * * *", "test.job")
    client.sync()
    for _ in range(3):
        client.actions.pause("alpha", operator="ops-ann")
        client.actions.resume("alpha", operator="ops-ann")
    ids = [r["id"] for r in conn.execute("SELECT id FROM awa.audit_log WHERE operator = 'ops-ann' ORDER BY id")]
    assert len(ids) == 6
    page = client.reads.search_audit(operator="ops-ann", limit=4, oldest=True)
    assert ([e.id for e in page.entries], page.next_before_id, page.oldest) == (ids[:4][::-1], None, True)
    assert [e.action for e in page.entries] == ["resume", "pause", "resume", "pause"]

