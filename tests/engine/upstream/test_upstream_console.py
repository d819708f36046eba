"""The console in upstream mode, under the Textual pilot, on databases awa-pg 0.6.9 migrated
(and, where upstream must honour an action, with upstream's own leader and worker running).

Expected values are read from upstream's tables directly (upstream_oracles.py) or worked
out by hand in the comments, never from the backend under test.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from awa_pg_env import UpstreamProcess
from helpers import until, wait_for
from reliability.cli_tree import assert_one_line_error, run_cli_in_terminal
from rich.console import Console
from textual.widgets import Input
from upstream_oracles import jobs

from awa_tui.engine.backend.protocol import ActionBackend, ConsoleBackend, ReadBackend
from awa_tui.engine.core.errors import AwaError
from awa_tui.engine.upstream.adapter import init_audit
from awa_tui.engine.upstream.backend import FEATURES_NOTE, UpstreamBackend
from awa_tui.engine.upstream.refusal import Unsupported
from awa_tui.tui.commands import palette_names
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.keymap import ACTS
from awa_tui.tui.launch import build_config, create_app
from awa_tui.tui.screens.alerts import AlertsScreen
from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.audit_entry import AuditEntryScreen, session_facts
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen
from awa_tui.tui.screens.help import HelpScreen, help_table
from awa_tui.tui.screens.main import MainScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable
from awa_tui.tui.widgets.status import PanelBar

OPERATOR = "alice@ops"
DB_LABEL = "upstream-test-db"
# Saturday 2027-03-27 12:00:00 UTC: the console's clock in these tests.
NOW = datetime(2027, 3, 27, 12, 0, 0, tzinfo=UTC)


def rendered(renderable: Any) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def seed_schedules(conn: Any) -> None:
    """Three schedules as upstream's upsert writes them, one paused by hand as its own UI does."""
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, tags) VALUES "
        "('hourly-report', '0 * * * *', 'UTC', 'report', 'q1', '{reports}'), "
        "('nightly-berlin', '30 2 * * *', 'Europe/Berlin', 'cleanup', 'q2', '{}'), "
        "('every-15-min', '*/15 * * * *', 'UTC', 'sync', 'q1', '{}')")
    conn.execute("UPDATE awa.cron_jobs SET paused_at = %s, paused_by = 'bob@ops' WHERE name = 'nightly-berlin'",
                 (NOW,))


@pytest.fixture
def backends(upstream_dsn: str) -> Iterator[Callable[..., UpstreamBackend]]:
    made: list[UpstreamBackend] = []

    def make(read_only: bool = False) -> UpstreamBackend:
        backend = UpstreamBackend(upstream_dsn, operator=OPERATOR, read_only=read_only)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


def make_app(backend: UpstreamBackend, clock: bool = True) -> Any:
    return create_app(ConsoleConfig(client=backend, db_label=DB_LABEL, clock=(lambda: NOW) if clock else None,
                                    schema_label="upstream Awa schema v40"))


async def ready(pilot: Any, app: Any) -> None:
    await until(pilot, lambda: app.apply_times, timeout=20, what="first paint with data")
    count = len(app.apply_times)
    app.refresh_now()
    await until(pilot, lambda: len(app.apply_times) > count and not app.poller.in_flight, what="a refresh")
    app.clear_notifications()
    await pilot.pause()


@pytest.fixture
async def upstream_console(backends: Callable[..., UpstreamBackend], upstream_conn: Any) -> AsyncIterator[Any]:
    seed_schedules(upstream_conn)
    app = make_app(backends())
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        yield app, pilot


def table_keys(app: Any, panel: str = "schedules") -> list[str]:
    return [row.key.value for row in app.main.panel(panel).table.ordered_rows]


def select(app: Any, key: str, panel: str = "schedules") -> None:
    table = app.main.panel(panel).table
    table.move_cursor(row=table.get_row_index(key), animate=False)


def footer_keys(app: Any) -> set[str]:
    return {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show and b.enabled}


# --- choosing the backend, the header, --lead ----------------------------------------------------


def test_upstream_console_satisfies_the_console_backend_protocol(
    backends: Callable[..., UpstreamBackend]
) -> None:
    backend: ConsoleBackend = backends()  # typed assignment
    assert isinstance(backend, ConsoleBackend)
    # Its reads and actions are objects of their own (their signatures: tests/test_architecture.py).
    assert isinstance(backend.reads, ReadBackend) and isinstance(backend.actions, ActionBackend)
    # The signatures agree too: parameter names, kinds, defaults and the read model returned.
    mismatched = []
    for name, member in vars(ConsoleBackend).items():
        if name.startswith("_") or not callable(member):
            continue
        wanted, got = inspect.signature(member), inspect.signature(getattr(UpstreamBackend, name))
        shape = [(p.name, p.kind, p.default) for p in wanted.parameters.values()]
        if shape != [(p.name, p.kind, p.default) for p in got.parameters.values()][: len(shape)] or (
            wanted.return_annotation != got.return_annotation
        ):
            mismatched.append(f"{name}{got} vs {wanted}")
    assert mismatched == []


def test_what_upstream_lacks_is_refused_in_one_line(backends: Callable[..., UpstreamBackend],
                                                    awa_pg_schema_version: int) -> None:
    """The CLI's words (test_upstream_cli.py): one backend says them for both."""
    backend = backends()
    needs = f"awa-tui's own schema; this database holds upstream Awa schema v{awa_pg_schema_version}"
    with pytest.raises(Unsupported) as caught:
        backend.actions.retire("x")
    assert str(caught.value) == f"retiring a schedule needs {needs}"
    with pytest.raises(Unsupported) as caught:
        backend.reads.list_owners()
    assert str(caught.value) == f"owners need {needs}"
    # The console's schedule form (S69): its keys are gone here, and the calls refuse too.
    from awa_tui.engine.actions.made import ScheduleRequest

    for call in (lambda: backend.actions.create_schedule("x", ScheduleRequest(cron="* * * * *", kind="k")),
                 lambda: backend.actions.edit_schedule("x", ScheduleRequest(queue="q")),
                 lambda: backend.actions.delete_schedule("x")):
        with pytest.raises(Unsupported) as caught:
            call()
        assert str(caught.value) == f"schedules made at run time need {needs}"
    # The overlap policy replace is refused by its own name (upstream's cron has no such policy).
    for call in (lambda: backend.actions.create_schedule("x", ScheduleRequest(cron="* * * * *", kind="k",
                                                                              overlap="replace")),
                 lambda: backend.actions.edit_schedule("x", ScheduleRequest(overlap="replace"))):
        with pytest.raises(Unsupported) as caught:
            call()
        assert str(caught.value) == f"the overlap policy replace needs {needs}"


def test_the_console_picks_upstream_mode_on_an_upstream_schema_and_names_it(
    upstream_dsn: str, awa_pg_schema_version: int
) -> None:
    config = build_config(dsn=upstream_dsn, lead=False, app_ref=None, demo=False, read_only=False,
                          operator=OPERATOR, refresh=2.0, say=lambda _m: None)
    try:
        assert isinstance(config.client, UpstreamBackend)
        assert config.schema_label == f"upstream Awa schema v{awa_pg_schema_version}"
        assert config.engine is None
        assert config.client.features == frozenset({"schedule_pause", "trigger", "queue_pause"})
    finally:
        config.client.close()


def test_lead_on_an_upstream_database_is_refused_in_one_line(upstream_dsn: str, awa_pg_schema_version: int,
                                                              upstream_conn: Any) -> None:
    with pytest.raises(AwaError) as caught:
        build_config(dsn=upstream_dsn, lead=True, app_ref=None, demo=False, read_only=False,
                     operator=OPERATOR, refresh=2.0, say=lambda _m: None)
    assert str(caught.value) == (
        f"--lead runs awa-tui's engine, which needs its own schema; this database holds upstream Awa schema "
        f"v{awa_pg_schema_version} (its own leader fires the schedules): drop --lead to operate it")
    # Nothing of awa-tui's was created in the upstream database.
    assert upstream_conn.execute(
        "SELECT count(*) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'awa' AND c.relname = 'schema_migrations'").fetchone()["n"] == 0


def test_awa_tui_lead_on_an_upstream_database_says_one_line(upstream_dsn: str, awa_pg_schema_version: int) -> None:
    out = run_cli_in_terminal(["--lead", "--dsn", upstream_dsn], {"COLUMNS": "200", "NO_COLOR": "1"})
    assert_one_line_error(out)
    assert out.error_lines == [
        f"error: --lead runs awa-tui's engine, which needs its own schema; this database holds upstream Awa "
        f"schema v{awa_pg_schema_version} (its own leader fires the schedules): drop --lead to operate it"]


async def test_header_names_the_schema_and_version(upstream_console: Any) -> None:
    app, _pilot = upstream_console
    assert app.sub_title == f"{DB_LABEL} · upstream Awa schema v40 · operator {OPERATOR}"


# --- what upstream lacks is absent from footer, help, palette and the panel bar -------------------


async def test_schedules_panel_lists_upstream_schedules_with_next_fires(upstream_console: Any) -> None:
    app, _pilot = upstream_console
    assert table_keys(app) == ["every-15-min", "hourly-report", "nightly-berlin"]
    rows = app.main.panel("schedules").rows
    # By hand from NOW (12:00 UTC Saturday): the next quarter hour is 12:15, the next hour 13:00;
    # 02:30 Berlin on Sunday 28 March 2027 is in the spring-forward gap (02:00 -> 03:00 CEST),
    # so it fires at 03:00 CEST = 01:00 UTC.
    assert rows["every-15-min"].next_fire == datetime(2027, 3, 27, 12, 15, tzinfo=UTC)
    assert rows["hourly-report"].next_fire == datetime(2027, 3, 27, 13, 0, tzinfo=UTC)
    assert rows["nightly-berlin"].next_fire == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)
    assert [(r.state, r.paused_by, r.owner) for r in rows.values()] == [
        ("active", None, None), ("active", None, None), ("paused", "bob@ops", None)]


async def test_the_config_files_columns_and_sort_leave_out_what_upstream_lacks(
    backends: Callable[..., UpstreamBackend], upstream_conn: Any
) -> None:
    """[panels.schedules] naming HEALTH (no health judgement upstream): left out, and its
    sort is by name instead of a sort upstream has not got."""
    from awa_tui.tui.panel_defaults import PanelDefaults

    seed_schedules(upstream_conn)
    app = create_app(ConsoleConfig(client=backends(), db_label=DB_LABEL, clock=lambda: NOW, panels={
        "schedules": PanelDefaults(sort="health", descending=True, columns=("name", "health", "queue", "state"))}))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        table = app.main.panel("schedules").table
        assert [str(c.label) for c in table.ordered_columns] == ["NAME ↑", "QUEUE", "STATE"]
        assert table_keys(app) == ["every-15-min", "hourly-report", "nightly-berlin"]


async def test_footer_help_palette_and_tabs_leave_out_what_upstream_lacks(upstream_console: Any) -> None:
    app, pilot = upstream_console
    # Footer of the schedules panel: pause/resume and trigger stay; adopt, retire, restore go.
    keys = footer_keys(app)
    assert {"s", "t"} <= keys
    assert not keys & {"a", "ctrl+d", "u"}
    tabs = rendered(app.main.query_one(PanelBar).render())
    assert tabs.strip() == "[1 Schedules]  3 Runtimes   5 Queues"
    palette = palette_names(lambda act: app.palette_allowed(act))
    assert "schedule: pause / resume" in palette and "queue: pause / resume" in palette
    for gone in ("panel: owners", "panel: plan", "schedule: retire", "schedule: restore",
                 "schedule: adopt / transfer", "owner: retire all schedules", "plan: entry details", "alerts: show"):
        assert gone not in palette, gone
    # A key upstream has no feature for says why, once, and does nothing.
    await pilot.press("ctrl+d")
    await until(pilot, lambda: [n.message for n in app._notifications], what="the toast")
    assert [n.message for n in app._notifications] == [f"retire: {FEATURES_NOTE}"]
    assert not isinstance(app.screen, ConfirmScreen)
    # 2 (owners) and 4 (plan) do nothing: still on schedules.
    await pilot.press("2")
    await pilot.press("4")
    await pilot.pause()
    assert app.active_panel == "schedules"
    # ! (alerts: upstream has no alert outbox) says why and opens nothing.
    app.clear_notifications()
    await pilot.press("exclamation_mark")
    await until(pilot, lambda: [n.message for n in app._notifications], what="the alerts toast")
    assert [n.message for n in app._notifications] == [f"alerts: {FEATURES_NOTE}"]
    assert not isinstance(app.screen, AlertsScreen)
    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
    text = rendered(help_table(app.screen.allowed))
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert "1, 3, 5 panels: schedules, runtimes, queues" in lines
    assert "Owners panel" not in text and "Plan panel" not in text
    for act in ACTS:
        if act.needs in {"owners", "plan", "lifecycle", "alerts"}:
            assert act.help not in text, act.help
    note = app.screen.query_one("#help-features").render()
    assert str(note) == FEATURES_NOTE.capitalize() + "."


# --- actions upstream honours, with and without awa-tui's audit trail ------------------------------


async def test_pause_says_it_will_not_be_audited_then_pauses_upstreams_row(
    upstream_console: Any, upstream_conn: Any
) -> None:
    app, pilot = upstream_console
    select(app, "hourly-report")
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirm dialog")
    facts = dict(app.screen.details)
    assert facts["Target"] == "schedule hourly-report"
    assert facts["Audit"] == ("NOT AUDITED: awa-tui db init-audit has not been run on this database: this "
                              "action will not be audited")
    assert not app.screen.query(Input)  # no end nor reason offered: upstream's leader has no pause end (S65)
    await pilot.press("y")
    row = await until(pilot, lambda: upstream_conn.execute(
        "SELECT paused_at, paused_by FROM awa.cron_jobs WHERE name = 'hourly-report' AND paused_at IS NOT NULL"
    ).fetchone(), what="the pause in upstream's row")
    assert row["paused_by"] == OPERATOR


async def test_bulk_pause_of_a_selection_pauses_each_and_skips_the_paused_one(
    upstream_console: Any, upstream_conn: Any
) -> None:
    app, pilot = upstream_console
    select(app, "every-15-min")
    await pilot.press("space")  # selects it, moves to hourly-report
    await pilot.press("space")  # selects hourly-report, moves to nightly-berlin (paused by bob@ops)
    await pilot.press("space")
    await pilot.press("s")  # not all paused: pause them
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the bulk dialog")
    await pilot.press("y")
    rows = await until(pilot, lambda: (r := upstream_conn.execute(
        "SELECT name, paused_by FROM awa.cron_jobs WHERE paused_at IS NOT NULL ORDER BY name").fetchall())
        and len(r) == 3 and r, what="the two pauses")
    assert [(r["name"], r["paused_by"]) for r in rows] == [
        ("every-15-min", OPERATOR), ("hourly-report", OPERATOR), ("nightly-berlin", "bob@ops")]
    await until(pilot, lambda: any("pause: 2 done" in n.message for n in app._notifications), what="the result")
    said = next(n.message for n in app._notifications if "pause: 2 done" in n.message)
    assert said.startswith("pause: 2 done, 1 skipped (nightly-berlin: schedule 'nightly-berlin' is already "
                           "paused (by 'bob@ops'))")


async def test_with_init_audit_the_dialog_has_no_warning_and_the_action_is_recorded(
    upstream_dsn: str, backends: Callable[..., UpstreamBackend], upstream_conn: Any
) -> None:
    seed_schedules(upstream_conn)
    assert init_audit(upstream_dsn) is True
    app = make_app(backends())
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        select(app, "nightly-berlin")
        await pilot.press("s")  # paused by bob@ops: s resumes
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirm dialog")
        assert app.screen.heading == "Resume schedule?"
        assert "Audit" not in dict(app.screen.details)
        await pilot.press("y")
        entry = await until(pilot, lambda: upstream_conn.execute(
            "SELECT id, operator, action, target, before, after FROM awa_tui_audit.audit_log").fetchone(),
            what="the audit entry")
        # `l` shows it: the audit screen reads awa-tui's audit schema on upstream databases.
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the dialog closed")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, AuditScreen)
                    and app.screen.query_one(KeyedTable).row_count == 1, what="the audit log")
        assert [row.key.value for row in app.screen.query_one(KeyedTable).ordered_rows] == [str(entry["id"])]
        # Enter opens it in full; the trail beside upstream's schema records no session, and says so.
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AuditEntryScreen) and app.screen.data is not None,
                    what="the audit entry")
        record = app.screen.data
        assert (record.id, record.target, record.session_recorded, record.client_addr) == (
            entry.pop("id"), "nightly-berlin", False, None)
        assert session_facts(record) == [("session", "not recorded in upstream Awa mode")]
    assert entry == {"operator": OPERATOR, "action": "resume", "target": "nightly-berlin",
                     "before": {"paused_at": "2027-03-27T12:00:00+00:00", "paused_by": "bob@ops"},
                     "after": {"paused_at": None, "paused_by": None}}
    assert upstream_conn.execute(
        "SELECT paused_at FROM awa.cron_jobs WHERE name = 'nightly-berlin'").fetchone()["paused_at"] is None


async def test_detail_screen_shows_an_upstream_schedule(upstream_console: Any) -> None:
    app, pilot = upstream_console
    select(app, "nightly-berlin")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.data is not None,
                what="the detail screen's data")
    data = app.screen.data
    assert data.schedule.name == "nightly-berlin" and data.schedule.state == "paused"
    # 02:30 Berlin daily from Saturday 12:00 UTC: Sunday's is in the gap (03:00 CEST = 01:00 UTC),
    # then 02:30 CEST = 00:30 UTC each day.
    assert [(f.utc, f.dst) for f in data.next] == [
        (datetime(2027, 3, 28, 1, 0, tzinfo=UTC), "gap"),
        (datetime(2027, 3, 29, 0, 30, tzinfo=UTC), None),
        (datetime(2027, 3, 30, 0, 30, tzinfo=UTC), None),
        (datetime(2027, 3, 31, 0, 30, tzinfo=UTC), None),
        (datetime(2027, 4, 1, 0, 30, tzinfo=UTC), None),
    ]
    assert data.recent == [] and data.audit == []
    keys = footer_keys(app)
    assert {"s", "t"} <= keys and not keys & {"a", "ctrl+d", "u"}


# --- with upstream's own runtime: trigger runs, queue pause stops dispatch, runtimes -------------


async def test_trigger_queue_pause_and_runtimes_against_upstreams_runtime(
    start_upstream: Callable[..., UpstreamProcess], backends: Callable[..., UpstreamBackend], upstream_conn: Any
) -> None:
    # Once a year: upstream's leader has nothing to fire during the test.
    start_upstream([{"name": "yearly", "cron": "0 0 1 1 *", "args_class": "UpRare", "queue": "q1"}], [("q1", 2)])
    wait_for(lambda: upstream_conn.execute("SELECT 1 FROM awa.cron_jobs WHERE name = 'yearly'").fetchone(),
             timeout=30, what="upstream's leader to sync the schedule")
    wait_for(lambda: upstream_conn.execute("SELECT 1 FROM awa.runtime_instances WHERE leader").fetchone(),
             timeout=30, what="upstream's runtime snapshot as leader")
    app = make_app(backends(), clock=False)  # DB time: upstream's snapshots are live
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        assert table_keys(app) == ["yearly"]
        # Upstream keeps finished jobs in ring partitions its maintenance truncates: a job may
        # complete and leave awa.jobs between two reads. So q1 is held while the trigger is
        # read waiting, then released; a job seen waiting and gone since has finished too (a
        # waiting or running job never leaves the view).
        side = backends()
        side.actions.queue_pause("q1")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the trigger dialog")
        await pilot.press("y")
        seen: dict[int, dict[str, Any]] = {}
        waiting = await until(pilot, lambda: [j for j in jobs(upstream_conn, "yearly") if j["state"] == "available"],
                              timeout=10, what="the triggered job waiting in the held queue")
        seen.update((j["id"], j) for j in waiting)
        side.actions.queue_resume("q1")
        side.close()

        def finished() -> list[dict[str, Any]]:
            current = {j["id"]: j for j in jobs(upstream_conn, "yearly")}
            seen.update(current)
            return [j for i, j in seen.items() if j["state"] == "completed" or i not in current]

        done = await until(pilot, finished, timeout=30, what="upstream's worker to complete the triggered job")
        assert [(j["kind"], j["queue"], j["metadata"]) for j in done] == [
            ("up_rare", "q1", {"cron_name": "yearly", "triggered_manually": True})]

        await pilot.press("3")
        await until(pilot, lambda: app.main.panel("runtimes").rows, what="the runtimes panel")
        instance = upstream_conn.execute("SELECT instance_id::text AS i FROM awa.runtime_instances WHERE leader"
                                         ).fetchone()["i"]
        row = app.main.panel("runtimes").rows[instance]
        assert (row.role, row.fresh, row.owner) == ("leader", True, None)
        assert app.freshness.attention is None  # a live upstream leader: no ATTENTION line

        await pilot.press("5")
        await until(pilot, lambda: "q1" in app.main.panel("queues").rows, what="queue q1")
        select(app, "q1", "queues")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the queue pause dialog")
        assert app.screen.heading == "Pause queue?"
        await pilot.press("y")
        await until(pilot, lambda: upstream_conn.execute(
            "SELECT paused FROM awa.queue_meta WHERE queue = 'q1' AND paused").fetchone(), what="q1 paused")
        await until(pilot, lambda: app.main.panel("queues").rows["q1"].paused, what="the panel to show it")
        # A trigger into the paused queue is not claimed by upstream's worker.
        await pilot.press("1")
        await until(pilot, lambda: app.active_panel == "schedules" and table_keys(app) == ["yearly"], what="back")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the second trigger dialog")
        await pilot.press("y")
        held = await until(pilot, lambda: [j for j in jobs(upstream_conn, "yearly") if j["state"] == "available"],
                           timeout=10, what="the job waiting in the paused queue")
        assert len(held) == 1


# --- snapshots -------------------------------------------------------------------------------------

LEADER_ID = "6f1c2a9e-0000-4000-8000-000000000001"


def seed_runtime(conn: Any) -> None:
    """One upstream runtime snapshot, leading, seen 2 s before NOW (as upstream's own writes it)."""
    conn.execute(
        "INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, last_seen_at, "
        "snapshot_interval_ms, healthy, postgres_connected, poll_loop_alive, heartbeat_alive, shutting_down, "
        "leader, queues) VALUES (%s, 'app-1', 4242, '0.6.9', %s, %s, 10000, true, true, true, true, false, true, "
        "'[{\"queue\": \"q1\"}, {\"queue\": \"q2\"}]')",
        (LEADER_ID, datetime(2027, 3, 27, 9, 0, tzinfo=UTC), datetime(2027, 3, 27, 11, 59, 58, tzinfo=UTC)))


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
def test_snapshot_upstream_schedules_panel(snap_compare: Any, backends: Callable[..., UpstreamBackend],
                                           upstream_conn: Any, size: tuple[int, int]) -> None:
    seed_schedules(upstream_conn)
    seed_runtime(upstream_conn)

    async def run_before(pilot: Any) -> None:
        await ready(pilot, pilot.app)

    assert snap_compare(make_app(backends()), terminal_size=size, run_before=run_before)


def test_snapshot_upstream_pause_dialog_not_audited(snap_compare: Any, backends: Callable[..., UpstreamBackend],
                                                    upstream_conn: Any) -> None:
    seed_schedules(upstream_conn)
    seed_runtime(upstream_conn)

    async def run_before(pilot: Any) -> None:
        await ready(pilot, pilot.app)
        select(pilot.app, "hourly-report")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), what="the confirm dialog")
        await pilot.pause()

    assert snap_compare(make_app(backends()), terminal_size=(80, 24), run_before=run_before)


async def test_no_calendars_panel_in_upstream_mode(upstream_console: Any) -> None:
    """Upstream's schema has no calendars: the panel is neither in the palette nor reachable
    by `:`, which says why in one line."""
    app, pilot = upstream_console
    assert "panel: calendars" not in palette_names(app.palette_allowed)
    app.action_show_panel("calendars")
    await pilot.pause()
    assert app.active_panel == "schedules"
    assert [n.message for n in app._notifications] == [f"no calendars panel here: {FEATURES_NOTE}"]


async def test_y_shows_an_upstream_schedule_raw(upstream_console: Any, upstream_conn: Any) -> None:
    """The raw view works the same on upstream's read models: every field, from the row the
    panel holds (the times the insert stamped read from upstream's table)."""
    from awa_tui.tui.screens.raw import RawScreen

    app, pilot = upstream_console
    select(app, "nightly-berlin")
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, RawScreen), what="the raw view")
    row = upstream_conn.execute("SELECT created_at, updated_at FROM awa.cron_jobs WHERE name = 'nightly-berlin'"
                                ).fetchone()
    assert app.screen.heading == "Raw: schedule nightly-berlin"
    assert app.screen.lines[:19] == [
        "name: nightly-berlin", "cron_expr: 30 2 * * *", "timezone: Europe/Berlin", "kind: cleanup", "queue: q2",
        "priority: 2", "max_attempts: 25", "missed_fire_policy: coalesce", "last_enqueued_at: null",
        "next_fire_at: 2027-03-28T01:00:00+00:00", f"created_at: {row['created_at'].astimezone(UTC).isoformat()}",
        f"updated_at: {row['updated_at'].astimezone(UTC).isoformat()}", "paused_at: 2027-03-27T12:00:00+00:00",
        "paused_by: bob@ops", "owner: null", "retired_at: null", "retired_by: null", "fault: null", "overlap: allow",
    ]
    assert app.screen.lines[19:37] == [
        "start_at: null", "end_at: null", "max_fires: null", "fires_count: 0", "finished_at: null",
        "max_lateness: null", "expect_success_within: null", "max_consecutive_failures: null",
        "pause_after_failures: null", "cron_written: null", "jitter_ms: 0", "overridden: null", "exclude_dates: null",
        "exclude_calendars: null", "origin: code", "paused_until: null", "pause_reason: null", "catchup_window: null",
    ]
    assert app.screen.lines[37:] == [
        "queue_paused: false", "queue_paused_by: null", "state: paused", "queue_paused_at: null",
        "last_job_state: null", "lateness: null", "next_fire: 2027-03-28T01:00:00+00:00", "next_fire_due: false",
        "health: null", "health_since: null", "health_reason: null", "last_result: none", "last_error: null",
        "fails_24h: 0", "outcomes: []",
    ]
    await pilot.press("escape")
    await until(pilot, lambda: isinstance(app.screen, MainScreen), what="back to the panels")
