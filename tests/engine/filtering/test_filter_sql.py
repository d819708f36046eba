"""A parsed filter compiled to SQL (engine/filtering/sql.py) selects exactly the rows it
names, on a real Postgres: through list_schedules, schedule_page and the counts."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from bulk_helpers import FLEET, NOW

from awa_tui import Client, ValidationError
from awa_tui.filters import parse


@pytest.mark.parametrize(("source", "expected"), [
    ("owner:billing", ["billing-report", "nightly-billing"]),
    ("OWNER:BILL*", ["billing-report", "nightly-billing"]),  # `*` is a wildcard, case folds
    ("owner:bill", []),  # owner matches the whole value
    ("-owner:billing", ["100%_off", "bad-zone", "sync-users", "tick", "tock"]),  # unowned rows too
    ("unowned", ["bad-zone", "sync-users", "tick", "tock"]),
    ("-owner:*", ["bad-zone", "sync-users", "tick", "tock"]),
    ("paused", ["billing-report"]),
    ("state:paused", ["billing-report"]),
    ("retired", ["sync-users"]),
    ("broken", ["bad-zone"]),  # judged as row_fault judges it: an unknown zone
    ("state:active", ["100%_off", "nightly-billing", "tick", "tock"]),
    ("-active", ["bad-zone", "billing-report", "sync-users"]),
    ("late", ["tick"]),  # due 5 min ago; tock (30 s) is not late, bad-zone is BROKEN
    ("-late queue:q1", ["bad-zone", "sync-users", "tock"]),
    ("tag:eu", ["nightly-billing"]),
    ("-tag:eu", ["100%_off", "bad-zone", "billing-report", "sync-users", "tick", "tock"]),
    ("kind:run", ["billing-report", "nightly-billing"]),  # kind matches a substring
    ("tz:america/new_york", ["nightly-billing"]),
    ("policy:catch_up", ["nightly-billing"]),
    ("name:%", ["100%_off"]),  # LIKE's wildcards are literal
    ("name:_", ["100%_off"]),
    ("q1 tick", ["bad-zone", "tick", "tock"]),  # words AND-ed, each over name/kind/queue/owner
    ("billing", ["billing-report", "nightly-billing"]),
    ('"nightly billing"', []),
    ("-billing -q1", ["100%_off"]),
    ("name:x' OR 1=1 --", []),  # values are parameters, never SQL
])
def test_filter_selects_exact_rows(fleet: Client, source: str, expected: list[str]) -> None:
    rows = fleet.reads.list_schedules(where=parse(source), now=NOW)
    assert [r.name for r in rows] == expected


def test_empty_filter_and_free_text_keep_todays_behaviour(fleet: Client) -> None:
    assert [r.name for r in fleet.reads.list_schedules(where=parse(""), now=NOW)] == FLEET
    assert [r.name for r in fleet.reads.list_schedules("BILL")] == ["billing-report", "nightly-billing"]
    # Free text and a parsed filter together: both must hold.
    assert [r.name for r in fleet.reads.list_schedules("billing", where=parse("paused"), now=NOW)] == ["billing-report"]


def test_schedule_page_counts_and_rows_follow_the_filter(fleet: Client) -> None:
    page = fleet.reads.schedule_page(where=parse("queue:q1 -retired"), now=NOW)
    assert [r.name for r in page.rows] == ["bad-zone", "tick", "tock"]
    assert (page.total, page.matched, page.paused, page.retired) == (7, 3, 1, 1)
    page = fleet.reads.schedule_page("t", where=parse("late"), sort="name", descending=True, now=NOW)
    assert ([r.name for r in page.rows], page.matched) == (["tick"], 1)
    # `late` is judged at the page's `now`: an hour earlier nothing was due yet.
    page = fleet.reads.schedule_page(where=parse("late"), now=NOW.replace(hour=11))
    assert (page.rows, page.matched) == ([], 0)


def test_a_filter_of_another_panel_is_refused(fleet: Client, conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        fleet.reads.list_schedules(where=parse("host:web-1", "runtimes"))
    assert str(caught.value) == "filter: a runtimes filter cannot select schedules"


def test_overlap_field_and_interval_flag_select_exact_rows(client: Client) -> None:
    """`overlap:` matches the overlap policy (S45, S74) and `interval` the interval schedules
    (S73), in the console's `/` and `cron list --filter` alike (one SQL condition)."""
    for name, expr, overlap in (("a-allow", "* * * * *", "allow"), ("b-skip", "@every 90s", "skip"),
                                ("c-buffer", "0 * * * *", "buffer_one"), ("d-replace", "@every 1h", "replace"),
                                ("e-replace", "*/5 * * * *", "replace")):
        client.periodic(name, expr, "k", overlap=overlap)
    client.sync()

    def names(source: str) -> list[str]:
        return [r.name for r in client.reads.list_schedules(where=parse(source), now=NOW)]

    assert names("overlap:replace") == ["d-replace", "e-replace"]
    assert names("overlap:BUFFER_ONE") == ["c-buffer"]
    assert names("-overlap:allow") == ["b-skip", "c-buffer", "d-replace", "e-replace"]
    assert names("interval") == ["b-skip", "d-replace"]
    assert names("-interval overlap:replace") == ["e-replace"]
