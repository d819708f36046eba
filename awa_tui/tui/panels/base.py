"""What every panel shares: a title line, a keyed table, and the fetch/show split.

`work()` runs on the UI thread and captures the panel's parameters (filter, sort); the
function it returns runs on the reader thread with the client and `now`; `show()` runs
back on the UI thread with the result. Panels never touch the database directly, and ask
the app for nothing but answers: what they want done they post (awa_tui/tui/messages.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static

from awa_tui.engine.console_api import ConsoleBackend
from awa_tui.tui.operations import NotPossible
from awa_tui.tui.widgets.keyed_table import KeyedTable

if TYPE_CHECKING:
    from awa_tui.tui.app import ConsoleApp

Work = Callable[[ConsoleBackend, datetime | None], Any]
Row = TypeVar("Row")  # the read model one table row shows (awa_tui/engine/models.py)


class Panel(Vertical, Generic[Row]):
    panel_id: ClassVar[str]
    title: ClassVar[str]

    def __init__(self) -> None:
        super().__init__(id=f"panel-{self.panel_id}", classes="panel")
        self.now: datetime | None = None
        self.rows: dict[str, Row] = {}  # keyed by the shown key (the table's row key); real rows

    @property
    def console(self) -> ConsoleApp:
        return self.app  # type: ignore[return-value]

    @property
    def table(self) -> KeyedTable:
        return self.query_one(KeyedTable)

    def ready(self) -> bool:
        """Composed and mounted. The first poll can land before a panel is (start-up on a
        fast database); such a result is skipped, and the next refresh fills the panel."""
        return self.is_mounted and bool(self.query(".panel-title"))

    def title_line(self, text: Text | str) -> None:
        self.query_one(".panel-title", Static).update(text if isinstance(text, Text) else Text(text))

    def work(self) -> Work:
        raise NotImplementedError

    def show(self, data: Any, now: datetime) -> None:
        raise NotImplementedError

    def focus_main(self) -> None:
        tables = self.query(KeyedTable)
        if tables and tables.first().display:
            tables.first().focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.console.action_allowed(self.panel_id, action)

    def selected_row(self) -> Row | None:
        key = self.table.selected_key
        return self.rows.get(key) if key else None

    def chosen_row(self, what: str) -> Row:
        """The row under the cursor, for an action: NotPossible (said at keypress) when none."""
        row = self.selected_row()
        if row is None:
            raise NotPossible(f"no {what} selected")
        return row
