"""What every panel shares: a title line, a keyed table, and the fetch/show split.

`work()` runs on the UI thread and captures the panel's parameters (filter, sort); the
function it returns runs on the reader thread with the client and `now`; `show()` runs
back on the UI thread with the result. Panels never touch the database directly, and ask
the app for nothing but answers: what they want done they post (awa_tui/tui/messages.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from awa_tui.engine.backend.protocol import ConsoleBackend
from awa_tui.tui import actions, filtering
from awa_tui.tui.messages import (
    CopyRequested,
    MutationKeyPressed,
    RawRequested,
    RefreshRequested,
    SortMenuRequested,
)
from awa_tui.tui.operations import NotPossible
from awa_tui.tui.panel_defaults import PanelDefaults, chosen_indexes
from awa_tui.tui.widgets.filter_bar import FilterBar
from awa_tui.tui.widgets.fitted import FittedLine
from awa_tui.tui.widgets.keyed_table import Column, KeyedTable

if TYPE_CHECKING:
    from awa_tui.tui.app import ConsoleApp

Work = Callable[[ConsoleBackend, datetime | None], Any]
Row = TypeVar("Row")  # the read model one table row shows (awa_tui/engine/read/models.py)


class Panel(Vertical, Generic[Row]):
    panel_id: ClassVar[str]
    title: ClassVar[str]
    BINDINGS = actions.bindings("panel")  # every panel's keys; a panel's own BINDINGS add to these
    defaults = PanelDefaults()  # the config file's [panels.NAME] (take_defaults): its columns and sort at start
    chosen: tuple[int, ...] | None = None  # the indexes of the cells its table shows (None: all, in order)

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

    def take_defaults(self, defaults: PanelDefaults) -> None:
        """The config file's section for this panel, given before it is mounted."""
        self.defaults = defaults

    def chosen_table(self, columns: Sequence[Column], **kwargs: Any) -> KeyedTable:
        """The panel's table with the columns the config file chose, sorted as it asks (by
        the table, as `o` sorts it; the sort keys change it afterwards)."""
        chosen = chosen_indexes(columns, self.defaults)
        self.chosen = None if chosen == tuple(range(len(columns))) else chosen
        table = KeyedTable(tuple(columns[i] for i in chosen), **kwargs)
        sort = self.defaults.sort
        if sort is not None:
            table.local_sort = (sort, self.defaults.descending)
            self.call_after_refresh(table.mark_sort, sort, self.defaults.descending)
        return table

    def chosen_cells(self, rows: list[tuple[str, tuple[Any, ...]]]) -> list[tuple[str, tuple[Any, ...]]]:
        """Rows of every column's cells as the table shows them (chosen_table's columns)."""
        chosen = self.chosen
        if chosen is None:
            return rows
        return [(key, tuple(cells[i] for i in chosen)) for key, cells in rows]

    def ready(self) -> bool:
        """Composed and mounted. The first poll can land before a panel is (start-up on a
        fast database); such a result is skipped, and the next refresh fills the panel."""
        return self.is_mounted and bool(self.query(".panel-title"))

    def title_line(self, text: Text | str, *narrower: Text) -> None:
        """The title; `narrower`: shorter forms for a narrow terminal (a panel whose title
        is a FittedLine), the first that fits is shown."""
        line = text if isinstance(text, Text) else Text(text)
        title = self.query_one(".panel-title", Static)
        if isinstance(title, FittedLine):
            title.show(line, *narrower)
        else:
            title.update(line)

    def work(self) -> Work:
        raise NotImplementedError

    def view(self) -> Hashable:
        """What decides which rows the table shows besides the data: the filter. A panel
        whose reads take more (a sort, a page) adds them. Two refreshes of one view light
        the cells that changed between them (widgets/lit.py); a new view lights nothing."""
        bar = self.filter_bar
        return None if bar is None or bar.where is None else str(bar.where)

    @contextmanager
    def refreshing(self, fetched: Hashable, light: bool = True) -> Iterator[None]:
        """show() inside is a refresh of the panel's tables; `fetched`: view() when its data
        was read (a filter typed meanwhile makes the pair a new view); `light` False: the
        config file's highlight_changes = false."""
        view = (fetched, self.view())
        with ExitStack() as stack:
            for table in self.query(KeyedTable):
                stack.enter_context(table.refreshing(view, light))
            yield

    def show(self, data: Any, now: datetime) -> None:
        raise NotImplementedError

    def focus_main(self) -> None:
        tables = self.query(KeyedTable)
        if tables and tables.first().display:
            tables.first().focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.console.action_allowed(self.panel_id, action)

    def on_key(self, event: events.Key) -> None:
        # Read-only: a mutation key has no binding; the app says why instead of nothing.
        self.post_message(MutationKeyPressed(self.panel_id, event.key))

    def copy_value(self, key: str) -> tuple[str, str]:
        """(what, value) `c` copies for the row `key`: the shown text of its first column
        (escaped: control bytes never reach the clipboard either)."""
        return self.title.lower().rstrip("s"), key

    @property
    def filter_bar(self) -> FilterBar | None:
        bars = self.query(FilterBar)
        return bars.first() if bars else None

    def filtered(self, rows: list[Any]) -> list[Any]:
        """The rows the panel's `/` filter lets through (all without one)."""
        bar = self.filter_bar
        return rows if bar is None else filtering.apply(bar.where, rows)

    def filter_note(self) -> Text:
        bar = self.filter_bar
        return Text() if bar is None else bar.note()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.post_message(RefreshRequested(soon=message.soon))

    def action_filter(self) -> None:
        bar = self.filter_bar
        if bar is None:
            self.notify(f"the {self.title.lower()} panel has no filter", markup=False, timeout=3)
        else:
            bar.open()

    def key_escape(self) -> None:
        bar = self.filter_bar
        if bar is not None and (bar.where or bar.error or bar.display):
            bar.clear_filter()
            self.focus_main()

    def sort_by_column(self, key: str) -> None:
        """`o`'s choice or a header click: sort the list by that column (again: reversed)."""
        self.table.sort_locally(key)

    def action_sort_menu(self) -> None:
        table = self.table
        current = table.local_sort[0] if table.local_sort else None
        self.post_message(SortMenuRequested([(c.key, c.label) for c in table.column_specs], current,
                                            lambda key: self.sort_by_column(key) if key else None))

    def action_reverse_sort(self) -> None:
        table = self.table
        if table.local_sort is not None:
            table.sort_locally(table.local_sort[0], not table.local_sort[1])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_key.value is not None:
            self.sort_by_column(event.column_key.value)

    def action_copy(self) -> None:
        key = self.table.selected_key
        if key is not None:
            self.post_message(CopyRequested(*self.copy_value(key)))

    def raw_model(self, key: str) -> Any:
        """What `y` shows for the row `key`: the read model the panel holds (None: nothing)."""
        return self.rows.get(key)

    def action_raw(self) -> None:
        key = self.table.selected_key
        model = None if key is None else self.raw_model(key)
        if key is not None and model is not None:
            what, value = self.copy_value(key)
            self.post_message(RawRequested(f"{what} {value}", model))

    def selected_row(self) -> Row | None:
        key = self.table.selected_key
        return self.rows.get(key) if key else None

    def chosen_row(self, what: str) -> Row:
        """The row under the cursor, for an action: NotPossible (said at keypress) when none."""
        row = self.selected_row()
        if row is None:
            raise NotPossible(f"no {what} selected")
        return row
