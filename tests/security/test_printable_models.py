"""Database strings inside the typed read models reach the console escaped: `printable_row`
makes a display copy of a model (same type, every string at any depth escaped, the rest
unchanged) and leaves the real model, which actions use, as it was."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from awa_tui.engine.read.models import (
    Agreement,
    Certificate,
    OwnedSchedules,
    OwnerCounts,
    OwnerPlan,
    OwnerSummary,
    SchedulePageRow,
)
from awa_tui.printable import printable_row
from awa_tui.tui.panels import owners, plan, schedules
from awa_tui.tui.widgets.live import Clock

NOW = datetime(2025, 3, 8, 12, 0, tzinfo=UTC)
HOSTILE = "x\x1b[2J\nFORGED\x07"
SHOWN = "x\\x1b[2J\\nFORGED\\x07"


def _row() -> SchedulePageRow:
    return SchedulePageRow(
        name=HOSTILE, cron_expr="*/5 * * * *", timezone="UTC", kind=HOSTILE, queue=HOSTILE, priority=2,
        max_attempts=25, missed_fire_policy="coalesce", last_enqueued_at=NOW, next_fire_at=None, created_at=NOW,
        updated_at=NOW, paused_at=NOW, paused_by=HOSTILE, owner=HOSTILE, retired_at=None, retired_by=None,
        fault=None, queue_paused=True, queue_paused_by=HOSTILE, state="paused", queue_paused_at=NOW,
        last_job_state=HOSTILE, lateness=timedelta(seconds=2), next_fire=NOW, next_fire_due=True,
        overlap="allow", start_at=None, end_at=None, max_fires=None, fires_count=0, finished_at=None,
    )


def test_a_schedule_row_is_copied_with_every_string_escaped() -> None:
    row = _row()
    shown = printable_row(row)
    assert type(shown) is SchedulePageRow
    assert (shown.name, shown.kind, shown.queue, shown.paused_by, shown.owner, shown.queue_paused_by,
            shown.last_job_state) == (SHOWN,) * 7
    assert (shown.paused_at, shown.lateness, shown.next_fire_due, shown.priority) == (
        NOW, timedelta(seconds=2), True, 2)
    assert row.name == HOSTILE and row.owner == HOSTILE  # the real row is untouched
    plain = [cell.plain for cell in schedules.cells(shown, Clock(NOW)) if hasattr(cell, "plain")]
    assert SHOWN in plain and not any("\x1b" in text or "\n" in text for text in plain)


def test_a_row_with_nothing_to_escape_is_shown_as_itself() -> None:
    # The common case costs no copy; one hostile string anywhere, even deep, makes one.
    clean = dataclasses.replace(_row(), name="billing.nightly", kind="k", queue="q", paused_by="ops", owner="billing",
                    queue_paused_by="ops", last_job_state="completed")
    assert printable_row(clean) is clean
    payload = {"tags": ["a", ("b", 1)], "n": 2}
    assert printable_row(payload) is payload
    hostile = {"tags": ["a", ("b\x1b", 1)], "n": 2}
    shown = printable_row(hostile)
    assert shown == {"tags": ["a", ("b\\x1b", 1)], "n": 2} and hostile["tags"][1][0] == "b\x1b"
    moved = dataclasses.replace(clean, last_job_state=HOSTILE)
    assert printable_row(moved) is not moved and printable_row(moved).last_job_state == SHOWN


def test_nested_models_and_payloads_are_escaped_at_every_depth() -> None:
    entry = OwnerPlan(
        owner=HOSTILE, now=NOW, fresh_declarations=1, manifest_hash=None, manifest_hashes=[HOSTILE],
        certificate=Certificate(hash=HOSTILE, size=1, certified_at=None, current=False),
        schedules=OwnedSchedules(active=1, retired=0),
        inserts=[{"name": HOSTILE, "definition": {HOSTILE: HOSTILE}}],
        updates=[{"name": HOSTILE, "changes": {"queue": {"from": HOSTILE, "to": "q"}}}],
        retirements=[HOSTILE], conflicts=[], will_insert=True, will_update=False, will_retire=False,
        agreement=Agreement(hash=None, since=None, recorded_since=None, evidence_window_s=30.0,
                            grace_required_s=0.0, grace_remaining_s=None),
        blockers=[{"code": "conflict", "message": HOSTILE}],
    )
    shown = printable_row(entry)
    assert (shown.owner, shown.manifest_hashes, shown.certificate.hash, shown.retirements) == (
        SHOWN, [SHOWN], SHOWN, [SHOWN])
    assert shown.inserts == [{"name": SHOWN, "definition": {SHOWN: SHOWN}}]
    assert shown.updates[0]["changes"] == {"queue": {"from": SHOWN, "to": "q"}}
    assert dataclasses.astuple(shown.schedules) == (1, 0) and shown.agreement == entry.agreement
    lines = plan.owner_lines(shown)
    assert lines[0] == (SHOWN, "BLOCKED", "-", "-", f"conflict: {SHOWN}")
    assert (SHOWN, "UPDATE", "no", SHOWN, f"queue: {SHOWN} -> q") in lines
    assert not any("\x1b" in part for line in lines for part in line)


def test_an_owner_summary_row_shows_escaped() -> None:
    summary = OwnerSummary(
        owner=HOSTILE, fresh_runtimes=0, manifest_hashes=[], certificate_hash=None, certified_at=None,
        certified=False, schedules_owned=2, schedules_retired=0, agreement_since=None, grace_required_s=0.0,
        grace_remaining_s=None, pending=OwnerCounts(inserts=1, updates=0, retirements=3),
        blockers=[{"code": HOSTILE, "message": "m"}],
    )
    cells = [cell.plain for cell in owners.cells(printable_row(summary))]
    assert cells == [SHOWN, "none live", SHOWN, "0", "2", "0", "-", "+1 -3", "-"]
