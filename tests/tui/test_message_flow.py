"""The console's data flows one way: panels and screens post requests (awa_tui/tui/messages.py)
that the app handles, and only read the app's settings; the console never imports the CLI.
The source checks are exact, so a new call into the app is a decision, not an accident."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

from textual.message import Message
from tui_helpers import ready, select, settled, until

from awa_tui.tui import messages
from awa_tui.tui.app import ConsoleApp
from awa_tui.tui.screens.confirm import ConfirmScreen
from awa_tui.tui.screens.detail import DetailScreen

TUI = Path(__file__).resolve().parents[2] / "awa_tui" / "tui"
# What panels, screens and the shared actions may touch on the app: read-only questions.
APP_READS = {"action_allowed", "features", "known_owners", "panel_allowed"}


def _sources(*parts: str) -> list[Path]:
    return [path for part in parts for path in sorted((TUI / part).glob("*.py"))]


def _imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def _is_app(node: ast.expr) -> bool:
    """`self.app`, `self.console` (their typed alias), or a local `console` bound to it."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr in ("app", "console")
    return isinstance(node, ast.Name) and node.id == "console"


def _app_uses(path: Path) -> set[str]:
    return {
        node.attr for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and _is_app(node.value)
    }


def test_console_never_imports_the_cli() -> None:
    offenders = [
        f"{path.relative_to(TUI)}: {name}"
        for path in sorted(TUI.rglob("*.py"))
        for name in _imported_modules(path)
        if name == "awa_tui.cli" or name.startswith("awa_tui.cli.")
    ]
    assert offenders == []


def test_panels_and_screens_only_read_the_app() -> None:
    files = [*_sources("panels", "screens"), TUI / "messages.py"]
    uses = {path.name: _app_uses(path) for path in files}
    assert set().union(*uses.values()) == APP_READS


def test_every_request_has_one_handler_and_it_is_the_app() -> None:
    requests = [
        cls for _, cls in inspect.getmembers(messages, inspect.isclass)
        if issubclass(cls, Message) and cls is not Message and cls.__module__ == messages.__name__
    ]
    assert sorted(cls.__name__ for cls in requests) == [
        "AlertsDataRequested", "AuditDataRequested", "AuditEntryRequested", "AuditRecordRequested",
        "CalendarNamesRequested", "CalendarRequested",
        "CopyRequested", "DetailDataRequested", "DetailRequested", "InfoRequested",
        "JobDataRequested", "JobDetailRequested", "JobsFilterRequested", "LedgerDataRequested",
        "MutationKeyPressed", "NextFiresRequested", "OperationRequested", "OverrideFormRequested", "OwnersSeen",
        "PanelsResumed", "RawRequested", "RefreshRequested", "RuntimeEventsDataRequested", "RuntimeEventsRequested",
        "ScheduleCheckRequested", "ScheduleFormRequested", "SchedulesFilterRequested", "SortMenuRequested",
    ]
    assert [cls.handler_name for cls in requests if not callable(getattr(ConsoleApp, cls.handler_name, None))] == []
    # No panel or screen handles a request on its way up (it would change what the app sees).
    handlers = {cls.handler_name for cls in requests}
    defined = {
        node.name
        for path in _sources("panels", "screens")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)
    }
    assert handlers & defined == set()


async def test_panel_and_detail_request_the_same_operation(console_factory: Any) -> None:
    """One copy of each schedule action: from the panel and from the detail screen, `s` posts
    the same operation; only the detail screen reloads itself afterwards."""
    app = console_factory()
    posted: list[messages.OperationRequested] = []

    def hook(message: Message) -> None:
        if isinstance(message, messages.OperationRequested) and message not in posted:
            posted.append(message)

    async with app.run_test(size=(120, 36), message_hook=hook) as pilot:
        await ready(pilot, app)
        panel = app.main.panel("schedules")
        select(app, "cleanup.tmp-files")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm from the panel")
        await pilot.press("escape")
        await pilot.press("enter")
        detail = await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen, what="detail")
        await until(pilot, lambda: detail.data is not None, what="detail loaded")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirm from the detail screen")

    assert len(posted) == 2
    from_panel, from_detail = (m.operation for m in posted)
    assert (from_panel.title, from_panel.verb, from_panel.target) == (
        "Resume schedule", "Resume", "schedule cleanup.tmp-files")
    assert from_panel.captured == ("paused", "alice@ops", None)
    assert (from_detail.title, from_detail.verb, from_detail.target, from_detail.consequence, from_detail.captured) \
        == (from_panel.title, from_panel.verb, from_panel.target, from_panel.consequence, from_panel.captured)
    assert (posted[0].after, posted[1].after) == (panel.after_operation, detail.after_operation)


async def test_owners_seen_by_a_panel_reach_the_app(console_factory: Any) -> None:
    app = console_factory()
    seen: list[tuple[str, ...]] = []

    def hook(message: Message) -> None:
        if isinstance(message, messages.OwnersSeen):
            seen.append(message.owners)

    async with app.run_test(size=(120, 36), message_hook=hook) as pilot:
        await ready(pilot, app)
        assert app.known_owners == ("billing",)  # from the runtimes only
        await pilot.press("2")
        await settled(pilot, app)
        await until(pilot, lambda: app.known_owners == ("billing", "platform"), what="owners from the panel")
    assert seen and set(seen) == {("billing", "platform")}
