"""The read models added for the console (engine/read/views.py): one page of schedules with
counts, next fire and lateness; one schedule in detail; runtimes' freshness at `now`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tui_seed import NOW, t

from awa_tui.engine.client import Client


@pytest.fixture
def reader(seeded):
    client = Client(seeded, read_only=True)
    yield client
    client.close()


def test_page_counts_filter_sort_and_limit(reader):
    page = reader.reads.schedule_page(now=NOW)
    assert (page.total, page.matched, page.paused, page.retired) == (8, 8, 1, 1)
    assert page.now == NOW
    filtered = reader.reads.schedule_page("BILL", now=NOW)  # case-insensitive, name/kind/queue/owner
    assert filtered.matched == 3 and len(filtered.rows) == 3
    assert reader.reads.schedule_page("100%_", now=NOW).matched == 0  # LIKE wildcards are literal
    cut = reader.reads.schedule_page(sort="state", limit=2, now=NOW)
    assert [r.name for r in cut.rows] == ["legacy.export", "cleanup.tmp-files"] and cut.matched == 8
    with pytest.raises(ValueError):
        reader.reads.schedule_page(sort="nope")


def test_a_page_without_counts_has_the_same_rows_and_no_counts(reader):
    counted, uncounted = reader.reads.schedule_page(now=NOW), reader.reads.schedule_page(now=NOW, counts=False)
    assert (uncounted.total, uncounted.matched, uncounted.paused, uncounted.retired) == (None, None, None, None)
    assert uncounted.rows == counted.rows and len(uncounted.rows) == 8
    assert (uncounted.unhealthy, uncounted.attention) == (counted.unhealthy, counted.attention)


def test_next_fire_due_and_lateness(reader):
    rows = {r.name: r for r in reader.reads.schedule_page(now=NOW).rows}
    assert rows["metrics.rollup"].next_fire == t("12:05:00") and not rows["metrics.rollup"].next_fire_due
    assert rows["cleanup.tmp-files"].next_fire_due  # paused with a missed fire: fires on resume
    assert rows["legacy.export"].next_fire is None  # retired: never
    assert rows["weekly.digest"].next_fire == t("07:00:00", 10)  # no hint: computed from the cron
    assert rows["metrics.rollup"].lateness == timedelta(seconds=2.3)
    assert rows["metrics.rollup"].last_job_state == "running"
    assert rows["crm.contact-sync"].queue_paused and rows["crm.contact-sync"].queue_paused_by == "bob@ops"


def test_detail_and_runtimes_at_an_injected_now(reader):
    detail = reader.reads.schedule_detail("billing.nightly-invoice", now=NOW)
    assert [f.dst for f in detail.next] == ["gap", None, None, None, None]
    assert len(detail.recent) == 2 and detail.audit == []
    fresh = {str(r.instance_id)[:8]: r.fresh for r in reader.reads.list_runtimes(now=NOW)}
    assert fresh == {"6f1c2a9e": True, "0b7d4e21": True, "c3a0ffee": False}
