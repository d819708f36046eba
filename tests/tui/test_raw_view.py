"""`y` on any row: its read model raw, one `name: value` a line, from the row the list
already holds (no read of its own); control bytes escaped, secrets never shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lease_seed import leader_lock_held
from psycopg.types.json import Jsonb
from rich.console import Console as RichConsole
from textual.widgets import Input
from tui_helpers import notes, ready, select, settled, until
from tui_seed import NOW, RUNTIMES, seed, t

from awa_tui.engine.alerts.models import Sink
from awa_tui.tui.formatting import raw_lines
from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.raw import RawScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable

HOSTILE = "ops\x1b[2J\x07.cleanup"


@pytest.fixture
def seeded(dsn: str, conn: Any) -> Iterator[str]:
    """The console's seed and one schedule whose name holds a control sequence."""
    seed(conn)
    created = t("08:00:00", 1)
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(
            "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, metadata, tags, "
            "missed_fire_policy, next_fire_at, created_at, updated_at) "
            "VALUES (%s, '0 3 * * *', 'UTC', 'ops.cleanup', 'default', %s, %s, %s, 'coalesce', %s, %s, %s)",
            (HOSTILE, Jsonb({}), Jsonb({}), [], t("03:00:00", 9), created, created))
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
        yield dsn


def plain(renderable: Any) -> str:
    console = RichConsole(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def raw(pilot: Any, app: Any) -> RawScreen:
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, RawScreen), what="the raw view")
    return app.screen


async def closed(pilot: Any, app: Any) -> None:
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, RawScreen), what="the raw view closed")


UNSET = ("paused_at", "paused_by", "owner", "retired_at", "retired_by", "fault")
HOSTILE_LINES = [
    "name: ops\\x1b[2J\\x07.cleanup", "cron_expr: 0 3 * * *", "timezone: UTC", "kind: ops.cleanup",
    "queue: default", "priority: 2", "max_attempts: 25", "missed_fire_policy: coalesce", "last_enqueued_at: null",
    "next_fire_at: 2025-03-09T03:00:00+00:00", "created_at: 2025-03-01T08:00:00+00:00",
    "updated_at: 2025-03-01T08:00:00+00:00", *(f"{name}: null" for name in UNSET), "overlap: allow",
    "start_at: null", "end_at: null", "max_fires: null", "fires_count: 0", "finished_at: null",
    "max_lateness: null", "expect_success_within: null", "max_consecutive_failures: null",
    "pause_after_failures: null", "cron_written: null", "jitter_ms: 0", "overridden: null",
    "exclude_dates: null", "exclude_calendars: null", "origin: code", "paused_until: null", "pause_reason: null",
    "catchup_window: null", "queue_paused: false", "queue_paused_by: null", "state: active",
    "queue_paused_at: null", "last_job_state: null", "lateness: null", "next_fire: 2025-03-09T03:00:00+00:00",
    "next_fire_due: false", "health: null", "health_since: null", "health_reason: null", "last_result: none",
    "last_error: null", "fails_24h: 0", "outcomes:", *(["  - unknown"] * 7),
]


async def test_y_on_a_schedule_shows_its_row_raw_its_control_bytes_escaped_c_copies_esc_closes(console):
    app, pilot = console
    select(app, "ops\\x1b[2J\\x07.cleanup")
    screen = await raw(pilot, app)
    assert screen.heading == "Raw: schedule ops\\x1b[2J\\x07.cleanup"
    assert screen.lines == HOSTILE_LINES
    shown = plain(screen.body())
    assert [line.rstrip() for line in shown.splitlines()] == HOSTILE_LINES
    assert "\x1b" not in shown and "\x07" not in shown
    await pilot.press("c")
    await until(pilot, lambda: app.clipboard == "\n".join(HOSTILE_LINES), what="copied")
    assert notes(app)[-1] == f"copied the raw row ({len(HOSTILE_LINES)} lines)"
    await closed(pilot, app)
    assert app.main.panel("schedules").table.selected_key == "ops\\x1b[2J\\x07.cleanup"


async def test_y_typed_in_the_filter_is_text_not_the_raw_view(console):
    app, pilot = console
    await pilot.press("slash", "y")
    await until(pilot, lambda: isinstance(app.focused, Input) and app.focused.value == "y",
                what="y typed in the filter")
    assert not isinstance(app.screen, RawScreen)


async def test_y_on_a_job_shows_the_job_summary_the_panel_holds(console):
    app, pilot = console
    await pilot.press("6")
    await settled(pilot, app)
    select(app, "10", "jobs")
    screen = await raw(pilot, app)
    assert screen.heading == "Raw: job id 10"
    assert screen.lines == [
        "id: 10", "schedule: payments.settlement-reconciliation-eu-west", "kind: payments.settle", "queue: billing",
        "state: completed", "result: ok", "attempt: 1", "max_attempts: 25", "fire_time: 2025-03-08T06:00:00+00:00",
        "manual: false", "triggered_by: null", "created_at: 2025-03-08T06:00:47+00:00",
        "run_at: 2025-03-08T06:00:00+00:00", "attempted_at: null", "finalized_at: null", "duration_s: null",
        "runtime: null", "last_error: null", "queue_paused: false",
    ]
    await closed(pilot, app)


async def test_y_on_a_runtime_and_on_an_owner_nested_values_indented(console):
    app, pilot = console
    await pilot.press("3")
    await settled(pilot, app)
    select(app, "6f1c2a9e-0000-4000-8000-000000000001", "runtimes")
    screen = await raw(pilot, app)
    assert screen.heading == "Raw: instance id 6f1c2a9e-0000-4000-8000-000000000001"
    assert screen.lines == [
        "instance_id: 6f1c2a9e-0000-4000-8000-000000000001", "hostname: app-1", "pid: 4242", "version: 0.1.0",
        "protocol_version: 1", "started_at: 2025-03-08T08:00:00+00:00", "last_seen_at: 2025-03-08T12:00:25+00:00",
        "snapshot_interval: 10s", "is_leader: true", "health: healthy", "stopped_at: null", "owner: billing",
        "authoritative: true", "manifest_hash: 1d94b72a84a91a01780fe613a6f6b37274444df21424fa3686e4e7fa88d32ba9",
        "fresh: true", "role: leader", "lease_expires_at: 2025-03-08T12:00:35+00:00", "passes: []",
        "schema_version: null", "leader_protocol: 4", "lead_refusal: null",
    ]
    await closed(pilot, app)
    await pilot.press("2")
    await settled(pilot, app)
    select(app, "billing", "owners")
    screen = await raw(pilot, app)
    assert screen.lines == [
        "owner: billing", "fresh_runtimes: 2", "manifest_hashes:",
        "  - 1d94b72a84a91a01780fe613a6f6b37274444df21424fa3686e4e7fa88d32ba9",
        f"certificate_hash: {'0' * 64}", "certified_at: 2025-03-08T09:00:00+00:00", "certified: false",
        "schedules_owned: 1", "schedules_retired: 1", "agreement_since: null", "grace_required_s: 600.0",
        "grace_remaining_s: null", "pending:", "  inserts: 1", "  updates: 1", "  retirements: 0",
        "blockers:",
        "  - code: conflict",
        "    message: schedule 'payments.settlement-reconciliation-eu-west' exists unowned; an operator must "
        "adopt it for 'billing'",
        "    blocks:", "      - updates", "      - retirements",
        "    name: payments.settlement-reconciliation-eu-west", "    kind: unowned", "    owner: null",
        "roles: []",  # no team role may act on billing (db grants --owner-role)
    ]


async def test_y_on_an_audit_entry_shows_it_from_the_page_read(console):
    app, pilot = console
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, AuditScreen) and app.screen.entries, what="audit log")
    select_audit(app, "3")
    screen = await raw(pilot, app)
    assert screen.heading == "Raw: audit entry 3"
    assert screen.lines == [
        "id: 3", "at: 2025-03-03T09:05:00+00:00", "operator: carol@ops", "action: retire", "target: legacy.export",
        "before:", "  retired_at: null", "after:", "  retired_at: 2025-03-03 09:05:00+00", "detail: {}",
        "db_user: null",
    ]
    await closed(pilot, app)
    assert isinstance(app.screen, AuditScreen)


def select_audit(app: Any, key: str) -> None:
    table = app.screen.query_one(KeyedTable)
    table.move_cursor(row=table.get_row_index(key), animate=False)


def test_secrets_never_appear_urls_and_keys_hidden_dsn_passwords_blanked():
    sink = Sink(name="hook", kind="webhook", route_by="all", route_value=None,
                url="https://user:pw@hooks.example:8443/T0KEN-s3cret?sig=abc", url_ref="env:HOOK_URL",
                key_ref="file:/run/secrets/hmac", channel=None)
    lines = raw_lines(sink)
    assert lines[:8] == [
        "name: hook", "kind: webhook", "route_by: all", "route_value: null", "url: (hidden)",
        "url_ref: (hidden)", "key_ref: (hidden)", "channel: null",
    ]
    assert not any(s in line for s in ("s3cret", "pw", "hooks.example", "HOOK_URL", "hmac") for line in lines)
    assert raw_lines({"last_error": "connection to postgresql://app:hunter2@db:5432/x failed\r\n", "dsn": "x",
                      "password": None, "tags": [], "args": {}}) == [
        "last_error: connection to postgresql://app:***@db:5432/x failed\\r\\n", "dsn: (hidden)",
        "password: null", "tags: []", "args: {}"]


def test_snapshot_raw_view_of_an_owner_nested_and_wrapped(snap_compare, console_factory):
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await ready(pilot, app)
        await pilot.press("2")
        await settled(pilot, app)
        select(app, "billing", "owners")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, RawScreen), what="the raw view")
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(console_factory(), terminal_size=(120, 36), run_before=run_before)
