"""The console App. It composes the pieces (main screen, poller, database threads, screens)
and owns the state they share; panels render and post requests (messages.py) that the app
handles, operations describe actions, the engine's Client does all database work on the
two DbThreads."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from rich.text import Text
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen

from awa_tui.engine.core.standby import ServerRole
from awa_tui.engine.health.models import ConsoleAttention, UnservedKind
from awa_tui.engine.read.fleet import Leadership, ReadWait
from awa_tui.engine.read.models import RuntimeRow
from awa_tui.engine.runtime.heap import freeze_once
from awa_tui.printable import printable
from awa_tui.tui import actions
from awa_tui.tui.attention import (
    attention_forms,
    attention_line,
    leader_problem,
    pass_problem,
    schedule_problem,
    stall_text,
    unserved_problem,
    wait_text,
)
from awa_tui.tui.commands import ConsoleCommands, system_commands
from awa_tui.tui.config import ConsoleConfig
from awa_tui.tui.dbthread import DbResult, DbThread
from awa_tui.tui.engine_log import EngineLog, EngineWarning
from awa_tui.tui.formatting import standby_text, utc
from awa_tui.tui.messages import (
    AlertsDataRequested,
    AuditDataRequested,
    AuditEntryRequested,
    AuditRecordRequested,
    CalendarNamesRequested,
    CalendarRequested,
    CopyRequested,
    DetailDataRequested,
    DetailRequested,
    InfoRequested,
    JobDataRequested,
    JobDetailRequested,
    JobsFilterRequested,
    LedgerDataRequested,
    MutationKeyPressed,
    NextFiresRequested,
    OperationRequested,
    OverrideFormRequested,
    OwnersSeen,
    PanelsResumed,
    RawRequested,
    RefreshRequested,
    RuntimeEventsDataRequested,
    RuntimeEventsRequested,
    ScheduleCheckRequested,
    ScheduleFormRequested,
    SchedulesFilterRequested,
    SortMenuRequested,
)
from awa_tui.tui.operations import Operation
from awa_tui.tui.panels.jobs import JobsPanel
from awa_tui.tui.panels.runtimes import RuntimesView
from awa_tui.tui.panels.schedules import SchedulesPanel
from awa_tui.tui.poller import Poller
from awa_tui.tui.screens.alerts import AlertsScreen, AlertsView
from awa_tui.tui.screens.audit import AuditScreen
from awa_tui.tui.screens.audit_entry import AuditEntryScreen
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import LEDGER_SIZE, DetailScreen
from awa_tui.tui.screens.help import HelpScreen
from awa_tui.tui.screens.info import InfoScreen
from awa_tui.tui.screens.job_detail import JobDetailScreen
from awa_tui.tui.screens.jump import ALIASES, JumpScreen
from awa_tui.tui.screens.main import MainScreen
from awa_tui.tui.screens.override import OverrideScreen
from awa_tui.tui.screens.raw import RawScreen
from awa_tui.tui.screens.runtime_events import RuntimeEventsScreen
from awa_tui.tui.screens.schedule_form import ScheduleFormScreen
from awa_tui.tui.screens.sort import SortScreen
from awa_tui.tui.widgets.keyed_table import KeyedTable
from awa_tui.tui.widgets.status import Freshness, StatusBar

REFRESH_STEPS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
READ_ONLY_TOAST_S = 5.0
# The unserved kinds are a scan of the waiting jobs: read with one refresh in this many
# seconds, not with every one (the leader itself looks once a minute).
UNSERVED_EVERY_S = 30.0
# A refresh unanswered this long: what it waits on is read on a second connection (S75),
# again every WAIT_ASK_EVERY_S while it lasts, each read bounded by WAIT_BOUND.
WAIT_ASK_AFTER_S = 2.0
WAIT_ASK_EVERY_S = 2.0
WAIT_BOUND = timedelta(seconds=2)
APP_ACTIONS = frozenset({"quit"} | {a.action.split("(")[0] for a in actions.acts("app")})


# How the engine's one-line errors about the schema's version begin (migrations: mismatch).
SCHEMA_MISMATCH = ("this database is at schema", "this database lacks", "the database has no awa schema")


@dataclass
class PollData:
    now: datetime
    runtimes: list[RuntimeRow]
    panel_id: str
    data: Any
    write_refusal: str | None = None  # why actions would be refused (a role without write grants, a standby)
    leadership: Leadership | None = None  # the leader lock's holder and its lease
    audit_gap: str | None = None  # why actions would not be audited (upstream Awa without init-audit)
    server: ServerRole | None = None  # a primary, or a hot standby and its replay lag
    attention: ConsoleAttention | None = None  # the worst schedule, the unserved kinds (S75)
    views: dict[str, Hashable] = field(default_factory=dict)  # panel id -> its view() when read (lit cells)


EXIT_WATCHDOG_S = 15.0  # after a stop signal, the process exits whatever still runs


def _exit_if_still_here(sig: int) -> None:
    time.sleep(EXIT_WATCHDOG_S)
    try:
        sys.stderr.write(f"awa-tui: still stopping {EXIT_WATCHDOG_S:g} s after {signal.Signals(sig).name}; "
                         "exiting now (the server ends this process's sessions, and a leader lock with them)\n")
        sys.stderr.flush()
    except OSError:  # the terminal is gone: nobody to tell
        pass
    os.kill(os.getpid(), signal.SIGKILL)  # no handler, no unwinding: nothing left can hold it


class ConsoleApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "awa-tui"
    BINDINGS = actions.bindings("app")
    COMMANDS = App.COMMANDS | {ConsoleCommands}

    def __init__(self, config: ConsoleConfig) -> None:
        super().__init__()
        self.config = config
        self.client = config.client
        self.engine = config.engine
        self.read_only: bool = bool(config.client.read_only)
        self.read_only_reason: str | None = None  # set when the database, not --read-only, says so
        self.operator: str = config.client.operator
        self.features: frozenset[str] = config.client.features  # type: ignore[assignment]  # Textual's own name  # what the backend can do (read/backend.FEATURES)
        self.audit_gap: str | None = None  # from the last poll: why an action would not be audited
        self.database = config.database
        self.known_owners: tuple[str, ...] = ()
        self.declared_owners: frozenset[str] = frozenset()  # owners a fresh runtime declares (a manifest)
        self.active_panel = "schedules"
        self.freshness = Freshness(interval=config.refresh, read_only=self.read_only)
        self.reader = DbThread("reader", self)
        self.writer = DbThread("writer", self)
        # What a stuck refresh waits on is asked on a thread of its own: the reader is the
        # one stuck, and an action queued on the writer must not wait behind it (S75).
        self.waits = DbThread("waits", self)
        self._wait: tuple[float, ReadWait | None, str | None] | None = None  # (fetch started, found, error)
        self._wait_asking = False
        self._wait_asked_at = 0.0
        self._unserved: tuple[UnservedKind, ...] = ()
        self._unserved_at = float("-inf")  # monotonic time of the last read of them
        self.poller = Poller(self, self.reader, self._poll_work, self._poll_data, self._poll_error, config.refresh)
        self._pending: PollData | None = None
        self.apply_times: list[float] = []  # UI-thread seconds spent applying each refresh (measured)
        self.exit_reason: str | None = None
        self.engine_log = EngineLog(self) if config.engine is not None else None
        self._read_only_said_at = -READ_ONLY_TOAST_S
        # Set before the header mounts: set later, the header's title watcher could still be
        # queued when a short session (a test) tears the header down, and fail on its children.
        where = f"embedded Postgres at {config.embedded_at}" if config.embedded_at else self.database
        schema = f" · {config.schema_label}" if config.schema_label else ""
        self.sub_title = f"{where}{schema} · operator {self.operator}"

    # --- composition -------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(self.config.page_size, self.config.panels)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]  # the default screen is always at the bottom
        assert isinstance(screen, MainScreen)
        return screen

    def on_mount(self) -> None:
        self.freshness.leader = self._leader_badge()
        self._status()
        self.poller.start()
        # The STALE counter's clock: it moves every second whether or not a read answers.
        self.watchdog_timer = self.set_interval(1.0, self._watchdog, name="watchdog")
        if self.config.config_problem is not None:  # the user's config file, ignored: one line
            self.notify(self.config.config_problem, severity="warning", markup=False, timeout=15)
        if self.config.default_panel != "schedules":
            self.call_after_refresh(self.action_show_panel, self.config.default_panel)
        if self.config.keys:  # the config file's [keys], checked for clashes when it was read
            self.set_keymap(dict(self.config.keys))
        if self.engine_log is not None:
            self.engine_log.install()
        if self.config.handle_signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._exit_on_signal, sig)

    def _exit_on_signal(self, sig: int) -> None:
        # The terminal is gone or we are told to stop: no question, leave cleanly.
        self.exit_reason = signal.Signals(sig).name
        # The last resort: Textual's own shutdown can wait for ever on its output thread when
        # the terminal went away (seen with SIGHUP: a queue put that never returns). The clean
        # stop (engine bounded at 10 s, launch.py) has had its chance by then.
        threading.Thread(target=_exit_if_still_here, args=(sig,), name="awa-exit-watchdog", daemon=True).start()
        if self.engine is not None:
            # Release leadership now rather than after the UI's teardown, which can stall
            # when the terminal is gone; other runtimes are waiting for the lock. The
            # launcher's own close() then just waits for this one.
            threading.Thread(target=self.engine.close, name="awa-release", daemon=True).start()
        self.exit()

    def on_unmount(self) -> None:
        self.poller.stop()
        if self.engine_log is not None:
            self.engine_log.remove()
        self.reader.stop()
        self.writer.stop()
        self.waits.stop()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast (panels' and screens' too: theirs come here) can quote the database:
        a refused action names who paused what. Escaped, whatever the caller passed."""
        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout,
                       markup=markup)

    def on_engine_warning(self, message: EngineWarning) -> None:
        if self.engine_log is not None and self.engine_log.should_show(message.text):
            self.notify(f"engine: {message.text}", severity="warning", markup=False, timeout=10)

    def on_db_result(self, message: DbResult) -> None:
        message.done(message.value, message.error)

    # --- refresh -----------------------------------------------------------------------------

    def _poll_work(self) -> Callable[[], PollData]:
        panel = self.main.panel(self.active_panel)
        panel_work, panel_id = panel.work(), panel.panel_id
        views = {shown.panel_id: shown.view() for shown in (panel, self.main.panel("runtimes"))}
        client, clock = self.client, self.config.clock
        # Not with the first refresh: the first paint waits for nothing it does not need (the
        # schedules panel's counts come a refresh later the same way).
        painted = bool(self.apply_times)
        unserved = painted and time.monotonic() - self._unserved_at >= UNSERVED_EVERY_S

        def work() -> PollData:
            now = clock() if clock else client.reads.db_time()
            runtimes = client.reads.list_runtimes(now=now)
            leadership = client.reads.leadership(now=now)
            attention_facts = client.reads.console_attention(now, unserved=unserved) if painted else None
            refusal = None if client.read_only else client.reads.write_refusal()
            return PollData(now, runtimes, panel_id, panel_work(client, now), refusal, leadership,
                            audit_gap=client.reads.audit_gap(), server=client.reads.server_role(),
                            attention=attention_facts, views=views)

        return work

    def _poll_data(self, data: PollData, elapsed: float) -> None:
        self.freshness.stale = False
        self._wait = None
        if data.attention is not None and data.attention.unserved is not None:
            self._unserved, self._unserved_at = data.attention.unserved, time.monotonic()
        self.freshness.updated = utc(data.now, date=False)
        self.audit_gap = data.audit_gap
        self.freshness.standby = standby_text(data.server)
        self._write_access(data.write_refusal)
        if len(self.screen_stack) > 1:
            self._pending = data  # never re-render under a dialog (Dolphie)
            self._status()
            return
        self._pending = None  # older than this; must not be shown after it (PanelsResumed is a message)
        self._apply(data)

    def _write_access(self, refusal: str | None) -> None:
        """A console whose role (or server) cannot write says READ-ONLY and drops its
        mutations as soon as it knows, instead of offering actions the database refuses;
        it follows GRANT/REVOKE. --read-only stays read-only whatever the role may do."""
        if self.client.read_only or refusal == self.read_only_reason:
            return
        self.read_only_reason = refusal
        self.read_only = self.freshness.read_only = refusal is not None
        if refusal:
            self.notify(f"read-only: {refusal}", severity="warning", markup=False, timeout=10)
        self.refresh_bindings()
        self._status()

    def on_panels_resumed(self, message: PanelsResumed) -> None:
        self.apply_pending()

    def apply_pending(self) -> None:
        data, self._pending = self._pending, None
        if data is not None:
            self._apply(data)

    def _apply(self, data: PollData) -> None:
        # A poll landing while the app tears down: nothing to show it on (the panels may
        # already be gone from a screen still on the stack).
        if not self.screen_stack or not self.main.query("#panel-runtimes"):
            return
        started = time.perf_counter()
        runtimes = data.runtimes
        leadership = data.leadership or Leadership(now=data.now)
        refusal = self.engine.runtime.leader_refusal if self.engine is not None else None
        facts = data.attention
        # On every panel (S75); the worst schedule on the others: the schedules panel has its own line.
        worst = (None if facts is None or self.active_panel == "schedules"
                 else schedule_problem(facts.worst, facts.unhealthy))
        problems = [leader_problem(leadership, refusal), pass_problem(runtimes), unserved_problem(self._unserved),
                    worst]
        self.freshness.attention, self.freshness.attention_count = attention_line(problems)
        self.freshness.attention_forms = attention_forms(problems)[1:]
        self.remember_owners(r.owner for r in runtimes)
        self.declared_owners = frozenset(
            r.owner for r in runtimes if r.owner and r.fresh and r.manifest_hash)
        self.freshness.leader = self._leader_badge()
        view = RuntimesView(runtimes, leadership, self.own_instance, refusal)
        shown: list[tuple[Any, Any]] = [(self.main.panel("runtimes"), view)]
        if data.panel_id != "runtimes":
            shown.append((self.main.panel(data.panel_id), data.data))
        for panel, rows in shown:
            if panel.ready():
                with panel.refreshing(data.views.get(panel.panel_id), self.config.highlight_changes):
                    panel.show(rows, data.now)
        self._status()
        if not self.apply_times:
            # What is alive after the first paint (modules, widgets, styles: ~70 MB) lives as
            # long as the app; frozen, a full collection no longer walks it, which took 80-190 ms
            # of the UI thread every few refreshes (perf_console.py). Once per process: a host
            # that froze its own heap keeps its choice.
            freeze_once()
        self.apply_times.append(time.perf_counter() - started)

    def _poll_error(self, error: str, elapsed: float) -> None:
        # A schema behind or ahead of this awa-tui answers fine: it is said as it is (the
        # engine's one line names what to run), not as a database that does not answer.
        schema = error.startswith(SCHEMA_MISMATCH)
        self._wait = None
        if not self.freshness.stale:
            self.notify(error if schema else f"database not answering: {error}", severity="error", markup=False,
                        timeout=8)
        self.freshness.stale = True
        self.freshness.stale_reason = error if schema else "database not answering; reconnecting with backoff"
        self._status()

    def _watchdog(self) -> None:
        self._ask_wait()
        self._stall()
        badge = self._leader_badge()
        if badge != self.freshness.leader:
            self.freshness.leader = badge
            self._status()

    def _stall(self) -> None:
        """A refresh unanswered past STALE's bound: its counter, moved every second by the
        watchdog (not only when a read returns), and what it waits on once that is known."""
        running = self.poller.overdue()
        if running is None:
            return
        wait = self._wait
        known = wait is not None and wait[0] == self.poller.started_at
        reason = stall_text(running, wait_text(wait[1], wait[2]) if wait is not None and known else "")
        if not self.freshness.stale or reason != self.freshness.stale_reason:
            self.freshness.stale, self.freshness.stale_reason = True, reason
            self._status()

    def _ask_wait(self) -> None:
        """What the refresh in flight waits on, read on a second connection (S75): once it
        has run WAIT_ASK_AFTER_S, then every WAIT_ASK_EVERY_S, one read at a time."""
        running, thread = self.poller.running(), self.reader.ident
        if running is None or running < WAIT_ASK_AFTER_S or self._wait_asking or thread is None:
            return
        fetch = self.poller.started_at
        if self._wait is not None and self._wait[0] == fetch and \
                time.monotonic() - self._wait_asked_at < WAIT_ASK_EVERY_S:
            return
        self._wait_asking, self._wait_asked_at = True, time.monotonic()
        client = self.client

        def done(found: ReadWait | None, error: str | None) -> None:
            self._wait_asking = False
            if self.poller.in_flight and self.poller.started_at == fetch:  # not an answer about a finished fetch
                self._wait = (fetch, found, error)
                self._stall()

        self.waits.submit(lambda: client.reads.read_wait(thread, WAIT_BOUND), done)

    @property
    def own_instance(self) -> str | None:
        """The in-process runtime's instance id (--lead), else None."""
        return None if self.engine is None else str(self.engine.identity.instance_id)

    def _leader_badge(self) -> str | None:
        if self.engine is None:
            return None
        refusal = self.engine.runtime.leader_refusal
        if refusal is not None:  # for as long as it runs: it is no standby for the leader
            return f"NOT LEADING: {refusal}"
        return "LEADER" if self.engine.is_leader else "FOLLOWER"

    def _status(self) -> None:
        for bar in self.query(StatusBar):
            bar.show(self.freshness)

    def on_refresh_requested(self, message: RefreshRequested) -> None:
        if message.soon:
            self.refresh_soon()
        else:
            self.refresh_now()

    def refresh_now(self) -> None:
        self.poller.refresh_now()

    def refresh_soon(self) -> None:
        self.poller.refresh_soon()

    # --- what may run ------------------------------------------------------------------------

    def action_allowed(self, scope: str, action: str) -> bool:
        """False removes the binding from footer, help and palette (not greyed): a mutation
        in read-only mode, or a key whose feature the backend lacks (upstream Awa)."""
        need = actions.needs(scope, action)
        if need is not None and need not in self.features:
            return False
        return not (self.read_only and actions.is_mutation(scope, action))

    def panel_allowed(self, panel_id: str) -> bool:
        return self.action_allowed("app", f"show_panel('{panel_id}')")

    def on_mutation_key_pressed(self, message: MutationKeyPressed) -> None:
        """A mutation key pressed in a read-only console says why nothing happens (its
        binding is gone): one toast, not repeated while it is still shown."""
        if self._say_missing_feature(message):
            return
        if not self.read_only:
            return
        mutations = [a for a in actions.acts(message.scope) if a.mutation]
        if message.key not in {k for a in mutations for k in a.key.split(",")}:
            return
        now = time.monotonic()
        if now - self._read_only_said_at >= READ_ONLY_TOAST_S:
            self._read_only_said_at = now
            why = "--read-only" if self.client.read_only else (self.read_only_reason or "the database refuses writes")
            labels = ", ".join(dict.fromkeys(a.label for a in mutations))
            self.notify(f"read-only console ({why}): {labels} are disabled here", severity="warning",
                        markup=False, timeout=READ_ONLY_TOAST_S)

    def _say_missing_feature(self, message: MutationKeyPressed) -> bool:
        """A key this backend has no feature for (upstream Awa: retire, adopt...) says why,
        once while shown, as read-only mode does."""
        missing = [a for a in actions.acts(message.scope)
                   if a.needs and a.needs not in self.features and message.key in a.key.split(",")]
        if not missing:
            return False
        now = time.monotonic()
        if now - self._read_only_said_at >= READ_ONLY_TOAST_S:
            self._read_only_said_at = now
            self.notify(f"{missing[0].label}: {self.client.features_note}", severity="warning", markup=False,
                        timeout=READ_ONLY_TOAST_S)
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The console's app keys act on the panels: not while a dialog is up (its own keys
        # answer it), and only help and quit over the detail and audit screens.
        if action not in APP_ACTIONS:
            return True
        if action == "show_panel" and parameters and not self.panel_allowed(str(parameters[0])):
            return False
        if isinstance(self.screen, ModalScreen):
            return False
        return isinstance(self.screen, MainScreen) or action in ("help", "quit")

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        return system_commands(super().get_system_commands(screen), self.read_only)

    def palette_allowed(self, act: actions.Act) -> bool:
        return act.scope in ("app", "table", *actions.ALL_PANELS) and self.action_allowed(act.scope, act.action)

    async def run_palette_act(self, act: actions.Act) -> None:
        if act.scope == "app":
            await self.run_action(act.action)
            return
        if act.scope == "table":  # the list in front of the operator: stay where they are
            table = self.current_table()
            if table is not None:
                await self.run_action(act.action, table)
            return
        self.action_show_panel(act.scope)
        await self.run_action(act.action, self.main.panel(act.scope))

    def current_table(self) -> KeyedTable | None:
        """The list the operator looks at: the focused one, else the active panel's (on the
        panels) or the screen's first (the audit log)."""
        focused = self.screen.focused
        if isinstance(focused, KeyedTable):
            return focused
        if self.screen is self.main:
            return self.main.panel(self.active_panel).table
        return next(iter(self.screen.query(KeyedTable)), None)

    # --- app keys ----------------------------------------------------------------------------

    def action_show_panel(self, panel_id: str) -> None:
        if not self.panel_allowed(panel_id):  # the jump box names every panel
            self.notify(f"no {panel_id} panel here: {self.client.features_note}", severity="warning",
                        markup=False, timeout=5)
            return
        self.active_panel = panel_id
        self.main.show_panel(panel_id)
        self.refresh_now()

    def action_jump(self) -> None:
        def go(target: str | None) -> None:
            if target == "audit":
                self.action_audit()
            elif target:
                self.action_show_panel(target)

        self.push_screen(JumpScreen({**ALIASES, **self.config.aliases}), go)

    def action_help(self) -> None:
        scope_ok = lambda act: self.action_allowed(act.scope, act.action)  # noqa: E731
        self.push_screen(HelpScreen(scope_ok, self.read_only, self.client.features_note, self.config.keys))

    def action_audit(self) -> None:
        self.push_screen(AuditScreen())

    def action_alerts(self) -> None:
        if not self.action_allowed("app", "alerts"):  # upstream Awa: no alert outbox
            self.notify(f"alerts: {self.client.features_note}", severity="warning", markup=False, timeout=5)
            return
        self.push_screen(AlertsScreen(self.poller.interval))

    def action_refresh_now(self) -> None:
        self.refresh_now()

    def _set_interval(self, step: int) -> None:
        current = self.poller.interval
        index = min(range(len(REFRESH_STEPS)), key=lambda i: abs(REFRESH_STEPS[i] - current))
        value = REFRESH_STEPS[max(0, min(len(REFRESH_STEPS) - 1, index + step))]
        self.poller.interval = self.freshness.interval = value
        self._status()
        self.notify(f"refreshing every {value:g}s", markup=False, timeout=2)
        self.refresh_now()

    def action_faster(self) -> None:
        self._set_interval(-1)

    def action_slower(self) -> None:
        self._set_interval(+1)

    async def action_quit(self) -> None:
        if self.engine is None:
            self.exit()
            return
        refusal = self.engine.runtime.leader_refusal
        if self.engine.is_leader:
            role = "the LEADER"
            consequence = ("The in-process engine stops and releases the leader lock; schedules fire only if "
                           "another runtime takes over (within about 2 s when one is running).")
        else:
            role = (f"running the engine, NOT LEADING ({refusal})" if refusal
                    else "running the engine (follower)")
            consequence = ("The in-process engine stops. It holds no leader lock, so firing is unchanged: "
                           "whichever runtime leads goes on leading.")
        dialog = ConfirmScreen(
            "Quit the console?", "Quit",
            [("Database", self.database), ("This process", role), ("Consequence", consequence)],
        )

        def answered(value: str | None) -> None:
            if value is not None:
                self.exit_reason = "quit"
                self.exit()

        self.push_screen(dialog, answered)

    # --- operations --------------------------------------------------------------------------

    def on_operation_requested(self, message: OperationRequested) -> None:
        self.confirm_and_run(message.operation, message.after)

    def confirm_and_run(self, op: Operation, after: Callable[[], None] | None = None) -> None:
        if self.read_only:  # defence in depth: the keys are gone, and the engine refuses too
            self.notify("read-only console: no action can change anything", severity="warning", markup=False)
            return
        if op.choices_need is not None and op.choices_need not in self.features:
            op = replace(op, choices=(), run_chosen=None)  # the plain action: the backend has no such values

        asked: list[ConfirmScreen] = []  # the dialog, once shown: its optional values (a pause's end)

        def answered(value: str | None) -> None:
            if value is None:
                # The verb and the target ("cancelled: trigger schedule x"); the title already
                # names the kind ("Trigger schedule"), which doubled it.
                self.notify(f"cancelled: {op.verb.lower()} {op.target}, nothing was done", markup=False, timeout=3)
                return
            chosen = dict(asked[-1].chosen) if asked else {}
            self.writer.submit(lambda: op.execute(self.client, value, chosen), done)

        def done(result: str | None, error: str | None) -> None:
            if error:
                self.notify(error, severity="error", markup=False, timeout=10)
            else:
                self.notify(f"{result} (as {self.operator}; see audit log: l)", markup=False, timeout=6)
            self.refresh_now()
            if after is not None:
                after()

        def ask(note: Text | None = None) -> None:
            dialog = ConfirmScreen.for_operation(op, self.database, self.operator, self.declared_owners,
                                                 note, audit_gap=self.audit_gap)
            asked.append(dialog)
            self.push_screen(dialog, answered)
            if op.preview is not None:
                # Kept live while the dialog is open: a resume opened at :02 and confirmed at
                # :10 fires what the clock says at :10, and the dialog must say that number.
                dialog.set_interval(self.poller.interval, lambda: read_preview(dialog.show_note))

        def read_preview(then: Callable[[Text], None]) -> None:
            preview = op.preview
            assert preview is not None
            client, clock = self.client, self.config.clock
            self.reader.submit(lambda: preview(client, clock() if clock else None),
                               lambda value, error: then(Text(printable(value if error is None else
                                                                        f"preview failed: {error}"))))

        if op.preview is None:
            ask()
            return
        # What it would do (a resume's fires, the schedules an adoption takes), read first.
        read_preview(ask)

    # --- screens that load on demand -------------------------------------------------------------

    def on_detail_requested(self, message: DetailRequested) -> None:
        self.push_screen(DetailScreen(message.name, self.poller.interval))

    def on_schedules_filter_requested(self, message: SchedulesFilterRequested) -> None:
        self.action_show_panel("schedules")
        panel = self.main.panel("schedules")
        assert isinstance(panel, SchedulesPanel)
        panel.apply_filter(message.text)

    def on_override_form_requested(self, message: OverrideFormRequested) -> None:
        self.push_screen(OverrideScreen(message.row), message.filled)

    def on_schedule_form_requested(self, message: ScheduleFormRequested) -> None:
        self.push_screen(ScheduleFormScreen(message.row), message.filled)

    def on_schedule_check_requested(self, message: ScheduleCheckRequested) -> None:
        """The form's dry run: what the create (or edit) would make, its next fires, the clock."""
        clock, client, m = self.config.clock, self.client, message

        def work() -> tuple[Any, Any, datetime]:
            if m.edit_of is None:
                made = client.actions.create_schedule(m.name, m.request, owner=m.owner, dry_run=True)
            else:
                made = client.actions.edit_schedule(m.edit_of, m.request, dry_run=True)
            now = clock() if clock else client.reads.db_time()
            return made, client.reads.definition_fires(made, m.count, after=now, fired=m.fired), now

        self.reader.submit(work, m.show)

    def on_sort_menu_requested(self, message: SortMenuRequested) -> None:
        self.push_screen(SortScreen(message.options, message.current), message.chosen)

    def on_copy_requested(self, message: CopyRequested) -> None:
        self.copy_to_clipboard(message.value)
        lines = message.value.count("\n") + 1  # several (the raw view): counted, not shown
        said = f"copied {message.what}: {message.value}" if lines == 1 else f"copied {message.what} ({lines} lines)"
        self.notify(said, markup=False, timeout=3)

    def on_raw_requested(self, message: RawRequested) -> None:
        self.push_screen(RawScreen(message.what, message.model))

    def on_info_requested(self, message: InfoRequested) -> None:
        self.push_screen(InfoScreen(message.title, message.body))

    def on_detail_data_requested(self, message: DetailDataRequested) -> None:
        clock, client, name = self.config.clock, self.client, message.name
        self.reader.submit(lambda: client.reads.schedule_detail(name, now=clock() if clock else None), message.show)

    def on_audit_data_requested(self, message: AuditDataRequested) -> None:
        clock, client, m = self.config.clock, self.client, message
        self.reader.submit(lambda: client.reads.search_audit(where=m.where, before_id=m.before_id, limit=m.limit,
                                                       now=clock() if clock else None, oldest=m.oldest), m.show)

    def on_alerts_data_requested(self, message: AlertsDataRequested) -> None:
        """What `alerts list --state open` and `alerts silences` read, at the console's clock."""
        clock, client, limit = self.config.clock, self.client, message.limit

        def work() -> AlertsView:
            now = clock() if clock else client.reads.db_time()
            return AlertsView(now, client.reads.alerts(state="open", limit=limit), client.reads.silences(now))

        self.reader.submit(work, message.show)

    def on_audit_record_requested(self, message: AuditRecordRequested) -> None:
        client, entry_id = self.client, message.entry_id
        self.reader.submit(lambda: client.reads.audit_record(entry_id), message.show)

    def on_next_fires_requested(self, message: NextFiresRequested) -> None:
        client, m = self.client, message
        self.reader.submit(lambda: client.reads.next_fires(m.name, m.count, after=m.after), m.show)

    def on_calendar_requested(self, message: CalendarRequested) -> None:
        client, name = self.client, message.name
        self.reader.submit(lambda: client.reads.get_calendar(name), message.show)

    def on_calendar_names_requested(self, message: CalendarNamesRequested) -> None:
        client = self.client
        self.reader.submit(lambda: [c.name for c in client.reads.list_calendars()], message.show)

    def on_ledger_data_requested(self, message: LedgerDataRequested) -> None:
        clock, client, m = self.config.clock, self.client, message
        self.reader.submit(lambda: client.reads.ledger_view(m.name, at=m.at, limit=LEDGER_SIZE,
                                                      now=clock() if clock else None), m.show)

    def on_runtime_events_requested(self, message: RuntimeEventsRequested) -> None:
        self.push_screen(RuntimeEventsScreen(message.instance_id))

    def on_runtime_events_data_requested(self, message: RuntimeEventsDataRequested) -> None:
        clock, client, instance_id = self.config.clock, self.client, message.instance_id
        self.reader.submit(lambda: client.reads.runtime_events(instance_id, now=clock() if clock else None),
                           message.show)

    def on_audit_entry_requested(self, message: AuditEntryRequested) -> None:
        self.push_screen(AuditEntryScreen(message.entry_id))

    def on_job_detail_requested(self, message: JobDetailRequested) -> None:
        self.push_screen(JobDetailScreen(message.job_id, self.poller.interval))

    def on_job_data_requested(self, message: JobDataRequested) -> None:
        client, job_id = self.client, message.job_id
        self.reader.submit(lambda: client.reads.job_detail(job_id), message.show)

    def on_jobs_filter_requested(self, message: JobsFilterRequested) -> None:
        """v on a schedule: its jobs, on the jobs panel (from a detail screen too: back to the panels)."""
        while len(self.screen_stack) > 1:
            self.pop_screen()
        panel = self.main.panel("jobs")
        assert isinstance(panel, JobsPanel)
        panel.apply_filter(message.text)
        self.action_show_panel("jobs")

    def on_owners_seen(self, message: OwnersSeen) -> None:
        self.remember_owners(message.owners)

    def remember_owners(self, *sources: Any) -> None:
        """Owner names offered when adopting/transferring: from every panel that saw one."""
        names = set(self.known_owners)
        for source in sources:
            names.update(o for o in source if o)
        self.known_owners = tuple(sorted(names))
