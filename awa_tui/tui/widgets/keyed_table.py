"""A DataTable updated by keyed diffs, so the cursor stays on the same row across refreshes.

Dolphie's approach: remove keys that are gone, update only the cells that changed, add
new keys, re-order only when the order changed, all inside one `batch_update()`. Columns
have fixed widths (auto widths re-measure every cell and made snapshot tests flaky).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from awa_tui.tui.widgets.live import LiveCell

# Beyond this many removals a rebuild is cheaper: DataTable.remove_row is O(rows).
REBUILD_REMOVALS = 64


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int


Row = tuple[str, tuple[Any, ...]]


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def cell(value: Any, style: str = "") -> Text:
    """A table cell. Always a Text: a plain str cell would be parsed as markup, and names
    come from the database."""
    return Text("-" if value is None else str(value), style=style, no_wrap=True, overflow="ellipsis", end="")


class KeyedTable(DataTable[Any]):
    """`sync(rows)` makes the table show exactly `rows`, in order, keyed by row key.

    The first column must show the row key itself (it is how the table re-orders rows
    with the public `sort()`): names of schedules, owners, queues.
    """

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.column_specs = list(columns)
        self._cells: dict[str, tuple[Any, ...]] = {}
        self._order: list[str] = []
        self.last_sync_stats: dict[str, int] = {}

    def on_mount(self) -> None:
        for column in self.column_specs:
            self.add_column(column.label, key=column.key, width=column.width)

    @property
    def selected_key(self) -> str | None:
        if not self._order or self.cursor_row < 0 or self.cursor_row >= len(self._order):
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except (RowDoesNotExist, IndexError):
            return None
        return row_key.value

    def sync(self, rows: Sequence[Row]) -> None:
        selected = self.selected_key
        old_cursor = self.cursor_row
        wanted = dict(rows)
        order = [key for key, _ in rows]
        old_keys = set(self._order)
        removed = [key for key in self._order if key not in wanted]
        added = updated = 0
        with self.app.batch_update():
            if not self._order or len(removed) > REBUILD_REMOVALS:
                self._rebuild(rows)
                added = len(rows)
            else:
                for key in removed:
                    self.remove_row(key)
                    del self._cells[key]
                for key, cells in rows:
                    old = self._cells.get(key)
                    if old is None:
                        self.add_row(*cells, key=key)
                        added += 1
                    elif old is not cells and old != cells:
                        for column, before, after in zip(self.column_specs, old, cells, strict=True):
                            if before != after:
                                self.update_cell(key, column.key, after)
                                updated += 1
                    self._cells[key] = cells
                # The table's order now: survivors in their old order, then additions.
                current = [key for key in self._order if key in wanted]
                current += [key for key in order if key not in old_keys]
                if current != order:
                    position = {key: index for index, key in enumerate(order)}
                    self.sort(self.column_specs[0].key, key=lambda cell: position[_plain(cell)])
            self._order = order
            self._restore_cursor(selected, old_cursor)
        self.last_sync_stats = {"rows": len(rows), "added": added, "removed": len(removed), "updated": updated}

    def tick(self) -> None:
        """Re-render the visible rows (their LiveCells read the clock at render time)
        without touching any cell. Re-setting one cell to itself is the public way to
        start a new render generation of a DataTable."""
        if self._order:
            first = self._order[0]
            self.update_cell(first, self.column_specs[0].key, self._cells[first][0])

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """A fast path for our one-line body cells (Text or LiveCell).

        The stock path renders each cell through Padding, Styled and Console.render_lines,
        and any update re-renders every visible cell: that was most of a refresh's UI
        time. This builds the same segments directly (same styles, same cache key as the
        stock path); headers and anything else still take the stock path.
        """
        if row_index < 0 or column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        cache_key = (
            row_key, column_key, base_style, cursor, hover, self._show_hover_cursor, self._update_count,
            self._pseudo_class_state,
        )
        cached = self._cell_render_cache.get(cache_key)
        if cached is not None:
            return cached
        value = self._data[row_key][column_key]
        text = value.text() if isinstance(value, LiveCell) else value
        if not isinstance(text, Text) or self.rows[row_key].height != 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, row_index < self.fixed_rows or column_index < self.fixed_columns, hover, cursor,
            self.show_cursor, self._show_hover_cursor, self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre_style = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component_style
        inner = max(0, width - 2 * self.cell_padding)
        body = text.copy()
        body.truncate(inner, overflow="ellipsis")
        console = self.app.console
        rendered = body.render(console)  # spans only: the Text's own style is ours to apply
        if body.style:
            rendered = Segment.apply_style(rendered, console.get_style(body.style))
        padding = Segment(" " * self.cell_padding)
        fill = Segment(" " * (inner - body.cell_len))  # unstyled, as the stock path pads
        segments = [padding, *rendered, fill, padding]
        lines = [list(Segment.apply_style(segments, pre_style, post_style))]
        self._cell_render_cache[cache_key] = lines
        return lines

    def _rebuild(self, rows: Sequence[Row]) -> None:
        self.clear()
        self._cells = {}
        for key, cells in rows:
            self.add_row(*cells, key=key)
            self._cells[key] = cells

    def _restore_cursor(self, selected: str | None, old_cursor: int) -> None:
        if not self._order:
            return
        if selected is not None and selected in self._cells:
            index = self.get_row_index(selected)
        else:
            index = min(max(old_cursor, 0), len(self._order) - 1)
        if index != self.cursor_row:
            self.move_cursor(row=index, animate=False, scroll=False)
