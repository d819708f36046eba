"""A DataTable updated by keyed diffs, so the cursor stays on the same row across refreshes.

Dolphie's approach: remove keys that are gone, update only the cells that changed, add
new keys, re-order only when the order changed, all inside one `batch_update()`.

Column widths come from content: each column is as wide as its widest cell (or its
header), between its `min_width` and its `width` (the most it takes when fitted to the
terminal; longer text is cut with an ellipsis; the summary line, enter or `w` show it
whole). They are measured here, from the cells' plain text, only for rows whose cells
changed (DataTable's auto widths re-measured every cell through Rich). A content width
grows at once and shrinks only by more than SHRINK_SLACK, so a relative time ticking from
"in 10m" to "in 9m" does not shift the columns every refresh. Which columns come first
and the room left over: column_layout.py. No column is ever left out: the ones that do
not fit are scrolled to (left/right one column at a time), the first column frozen.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from awa_tui.tui import actions
from awa_tui.tui.widgets.column_layout import Layout, layout
from awa_tui.tui.widgets.lit import changed, lit_row
from awa_tui.tui.widgets.live import LiveCell

# Beyond this many removals a rebuild is cheaper: DataTable.remove_row is O(rows).
REBUILD_REMOVALS = 64
SHRINK_SLACK = 2
SORT_MARK = 2  # " ↑" after the label of the sorted column
NO_VIEW = object()  # before the first refresh: no view to compare a refresh with
WIDE_CAP = 200  # the most any column takes, even wide (w): a sane line, not a whole traceback


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int  # the most it takes fitted to the terminal (wider content is cut with an ellipsis)
    # Which columns give way when the terminal is too narrow for all: the highest priority
    # number moves first past the right edge (scrolled to with right); 0 always on the first
    # screen (the name, the state, the next fire). Its facts are in the summary line too.
    priority: int = 0
    min_width: int = 0  # the least it takes, whatever the content (e.g. a live time's usual length)

    def fit(self, content: int) -> int:
        """Its width for `content` cells of text: the header (and its sort mark) always fits."""
        return min(self.width, self.whole(content))

    def whole(self, content: int) -> int:
        """Its width showing `content` whole (wide mode, or room to spare), up to WIDE_CAP."""
        return min(WIDE_CAP, max(self.min_width, len(self.label) + SORT_MARK, content))


Row = tuple[str, tuple[Any, ...]]


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, (Text, LiveCell)) else str(cell)


class Cell(Text):
    """A one-line Text in a column of fixed width. DataTable measures every cell of every
    row it is given (a column's content width, unused when the width is fixed), and each
    measure of a renderable that has `__rich_measure__` first builds the console's options
    (a terminal size lookup): 8,000 measures, 0.34 s of a profiled 1,000-row first paint.
    A renderable without one is measured at DataTable's default without that, so a Cell
    has none (`= None`, as `__hash__ = None` removes an inherited method); KeyedTable sizes
    its columns itself (_content_widths). LiveCell does the same."""

    __slots__ = ()
    __rich_measure__ = None  # type: ignore[assignment]


def cell(value: Any, style: str = "") -> Text:
    """A table cell. Always a Text: a plain str cell would be parsed as markup, and names
    come from the database."""
    return Cell("-" if value is None else str(value), style=style, no_wrap=True, overflow="ellipsis", end="")


@dataclass(frozen=True)
class _Paint:
    """What one paint of the table reads from its styles (once, not once per line); a
    cached cell is reused only under an equal _Paint."""

    base_style: Style
    cursor_style: Style
    hover_style: Style
    show_cursor: bool
    css_foreground: bool
    css_background: bool
    cell_padding: int
    fixed_style: Style
    fixed_cursor_style: Style

    def component_style(self, on_cursor: bool, on_hover: bool, fixed: bool = False) -> Style:
        # DataTable's order: the hover style, then the cursor style over it (and a frozen
        # column's cursor style over that).
        style = Style()
        if on_hover:
            style += self.hover_style
        if on_cursor:
            style += self.cursor_style
            if fixed:
                style += self.fixed_cursor_style
        return style

    def cell_styles(self, on_cursor: bool, on_hover: bool, fixed: bool = False) -> tuple[Style, Style]:
        component = self.component_style(on_cursor, on_hover, fixed)
        post_foreground = Style.from_color(color=component.color) if self.css_foreground else Style.null()
        post_background = Style.from_color(bgcolor=component.bgcolor) if self.css_background else Style.null()
        return component, post_foreground + post_background

    def extend_style(self, row_index: int, on_cursor: bool, on_hover: bool) -> Style:
        """The blank right of the last column, as DataTable styles it for a row cursor."""
        style = self.base_style + self.component_style(on_cursor, on_hover)
        return style + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})


class KeyedTable(DataTable[Any]):
    """`sync(rows)` makes the table show exactly `rows`, in order, keyed by row key.

    The first column must show the row key (it is how the table re-orders rows with the
    public `sort()`), possibly marked, but its text unique per row: names of schedules,
    owners, queues.
    """

    BINDINGS = actions.bindings("table")  # row motions (keymap.py); Home/End move rows, not the view
    # The vertical scrollbar's room is kept whether or not the rows overflow: the columns are
    # laid out once for the width left, and do not shift when a filter shortens the list.
    DEFAULT_CSS = "KeyedTable { scrollbar-gutter: stable; }"

    def __init__(self, columns: Sequence[Column], fixed_columns: int = 1, **kwargs: Any) -> None:
        # The first column (the name) stays put while scrolling sideways.
        super().__init__(cursor_type="row", zebra_stripes=False, fixed_columns=fixed_columns, **kwargs)
        self.column_specs = list(columns)
        self.content = [0] * len(self.column_specs)  # each column's widest cell (see the module's docstring)
        self._measured: dict[str, tuple[tuple[Any, ...], tuple[int, ...]]] = {}  # key -> (cells, their widths)
        self.wide = False  # w: every column as wide as its content
        self.column_layout = self._layout()
        self.sorted_by: tuple[str | None, bool] | None = None  # (column key, descending) marked in the header
        self.local_sort: tuple[str, bool] | None = None  # sorted here, by a column's text (small lists)
        self._cells: dict[str, tuple[Any, ...]] = {}
        self._order: list[str] = []
        self.last_sync_stats: dict[str, int] = {}
        self.hover_shown = False
        self.to_end = False  # G/End was the last key: the cursor follows the list's end
        # (row key, column index) -> (cell, its LiveCell text, (row index, cursor, hover,
        # paint, width), segments): the cell object is held, so identity is a safe check.
        self._rendered: dict[tuple[str, int], tuple[Any, str | None, tuple[Any, ...], list[Segment]]] = {}
        self._paint: _Paint | None = None
        # What the last refresh changed (widgets/lit.py), lit until the next: row key -> its
        # lit column indexes (None: a new row, all), and those rows' cells as shown, lit
        # (`_cells` keeps the cells as given: the next refresh compares with them).
        self.lit: dict[str, frozenset[int] | None] = {}
        self._lit_cells: dict[str, tuple[Any, ...]] = {}
        self._refresh: tuple[Hashable, bool] | None = None  # inside refreshing(): (its view, light changes)
        self._view: Hashable = NO_VIEW  # the view of the last refresh

    def on_mount(self) -> None:
        self._add_columns()

    @property
    def shown(self) -> tuple[int, ...]:
        """Indexes of the columns (of `column_specs` and of every row's cells), left to right."""
        return self.column_layout.order

    @property
    def first_screen(self) -> tuple[int, ...]:
        """The columns that fit the terminal before any scrolling sideways."""
        return self.column_layout.order[: self.column_layout.fitting]

    def _layout(self) -> Layout:
        return layout(self.column_specs, self.content, self._room(), 2 * self.cell_padding, self.wide)

    def _room(self) -> int:
        """The width the columns have: the table's, less the vertical scrollbar's room (0: not
        laid out yet)."""
        return self.scrollable_content_region.width if self.is_mounted else 0

    def _add_columns(self) -> None:
        for index in self.column_layout.order:
            column = self.column_specs[index]
            self.add_column(column.label, key=column.key, width=self.column_layout.widths[index])

    def _content_widths(self, rows: Sequence[Row]) -> list[int]:
        """Each column's widest cell in these rows, with SHRINK_SLACK against the current ones."""
        measured: dict[str, tuple[tuple[Any, ...], tuple[int, ...]]] = {}
        widest = [0] * len(self.column_specs)
        for key, cells in rows:
            known = self._measured.get(key)
            if known is None or known[0] is not cells:
                known = (cells, tuple(cell_len(_plain(c)) for c in cells))
            measured[key] = known
            for index, width in enumerate(known[1]):
                if width > widest[index]:
                    widest[index] = width
        self._measured = measured
        if len(self.content) != len(widest):  # the specs were replaced: nothing to keep
            return widest
        return [new if new > old or new < old - SHRINK_SLACK else old
                for new, old in zip(widest, self.content, strict=True)]

    def _project(self, cells: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.column_layout.natural:
            return cells
        return tuple(cells[i] for i in self.column_layout.order)

    def _refit(self) -> None:
        """After a resize: the columns again if their layout changed."""
        wanted = self._layout()
        if wanted != self.column_layout and self._room():
            self._relayout([(key, self._cells[key]) for key in self._order], wanted)

    def _relayout(self, rows: Sequence[Row], placed: Layout) -> None:
        """Columns again (their order, how wide), then the rows: after a resize, w, or a
        change of content widths. The cursor stays on its row, the view on its rows and on
        the column it was scrolled to."""
        selected, cursor = self.selected_key, self.cursor_row
        anchor, top = self._column_in_view(), self.scroll_offset.y  # in the old layout
        self.column_layout = placed
        with self.app.batch_update():
            self.clear(columns=True)
            self._add_columns()
            self._rebuild(rows)
            self._order = [key for key, _ in rows]
            self._restore_cursor(selected, cursor)
            self._restore_view(anchor, top)
        if self.sorted_by is not None:
            self.mark_sort(*self.sorted_by)

    @property
    def selected_key(self) -> str | None:
        if not self._order or self.cursor_row < 0 or self.cursor_row >= len(self._order):
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except (RowDoesNotExist, IndexError):
            return None
        return row_key.value

    def sort_locally(self, key: str, descending: bool | None = None) -> None:
        """Sort by column `key` (again: the other way) and keep it so across refreshes."""
        if descending is None:
            descending = self.local_sort is not None and self.local_sort[0] == key and not self.local_sort[1]
        self.local_sort = (key, descending)
        self.mark_sort(key, descending)
        if self._order:
            self.sync([(k, self._cells[k]) for k in self._order])

    def _locally_sorted(self, rows: Sequence[Row]) -> Sequence[Row]:
        if self.local_sort is None:
            return rows
        key, descending = self.local_sort
        index = next((i for i, c in enumerate(self.column_specs) if c.key == key), None)
        if index is None:
            return rows

        def order(row: Row) -> tuple[int, float, str]:
            value = row[1][index]
            text = value.plain if hasattr(value, "plain") else str(value)
            try:  # numbers as numbers ("1,204" too), the rest as text
                return (0, float(text.replace(",", "")), "")
            except ValueError:
                return (1, 0.0, text.lower())

        return sorted(rows, key=order, reverse=descending)

    def sync(self, rows: Sequence[Row]) -> None:
        self._sync(rows)
        if self.to_end and self.row_count:  # G was the last key: rows a page load added are passed too
            self.move_cursor(row=self.row_count - 1, animate=False)

    @contextmanager
    def refreshing(self, view: Hashable, light: bool = True) -> Iterator[None]:
        """The syncs inside are a refresh of `view` (what decides the rows: filter, sort,
        page). Against the last refresh of the same view, the cells that changed and the rows
        new since are lit until the next refresh; the first one, or a new view, lights
        nothing (nor does `light` False). Syncs outside (a selection marked, a local sort)
        keep what is lit."""
        self._refresh = (view, light)
        try:
            yield
        finally:
            self._refresh = None

    def _light(self, rows: Sequence[Row]) -> dict[str, frozenset[int] | None]:
        """Which cells of `rows` are lit (self.lit, self._lit_cells); returns what was lit.
        Only the rows given (the table's) are compared, each by identity first: a panel
        that keeps a row's cells while its data is unchanged pays one `is` a row."""
        was = self.lit
        if self._refresh is not None:
            view, light = self._refresh
            lit: dict[str, frozenset[int] | None] = {}
            if light and view == self._view and self._order:
                for key, cells in rows:
                    before = self._cells.get(key)
                    if before is None or len(before) != len(cells):
                        lit[key] = None
                    elif before is not cells and before != cells:
                        lit[key] = changed(before, cells)
            self._view, self.lit = view, lit
        if self.lit or was:
            self._lit_cells = {key: lit_row(cells, self.lit[key]) for key, cells in rows if key in self.lit}
        return was

    def _sync(self, rows: Sequence[Row]) -> None:
        rows = self._locally_sorted(rows)
        was_lit = self._light(rows)
        self.content = self._content_widths(rows)
        placed = self._layout()
        if placed != self.column_layout:
            self._relayout(rows, placed)
            self.last_sync_stats = {"rows": len(rows), "added": len(rows), "removed": 0, "updated": 0}
            return
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
                    for column_index in range(len(self.column_specs)):
                        self._rendered.pop((key, column_index), None)
                        self._rendered.pop((key, -1 - column_index), None)
                for key, cells in rows:
                    old = self._cells.get(key)
                    shown = self._lit_cells.get(key, cells)
                    if old is None:
                        self.add_row(*self._project(shown), key=key)
                        added += 1
                    elif (relit := key in self.lit or key in was_lit) or (old is not cells and old != cells):
                        for index, (column, before, after) in enumerate(zip(self.column_specs, old, cells,
                                                                            strict=True)):
                            if before != after or (relit and _is_lit(was_lit, key, index) !=
                                                   _is_lit(self.lit, key, index)):
                                self.update_cell(key, column.key, shown[index])
                                updated += 1
                    self._cells[key] = cells
                # The table's order now: survivors in their old order, then additions.
                current = [key for key in self._order if key in wanted]
                current += [key for key in order if key not in old_keys]
                if current != order:
                    # By the first cell's text: it is the key, or the key marked (a selected row).
                    position = {_plain(wanted[key][0]): index for index, key in enumerate(order)}
                    self.sort(self.column_specs[0].key, key=lambda cell: position[_plain(cell)])
            self._order = order
            self._restore_cursor(selected, old_cursor)
        self.last_sync_stats = {"rows": len(rows), "added": added, "removed": len(removed), "updated": updated}

    def tick(self) -> None:
        """Re-render the visible rows (their LiveCells read the clock at render time)
        without touching any cell: body lines are rendered here (`render_line`), and a
        LiveCell whose text changed misses the cell cache by itself."""
        if self._order:
            self.refresh()

    # --- rendering ------------------------------------------------------------------------
    # DataTable renders every cell of a line through Rich (Padding, Styled, render_lines)
    # and any update_cell invalidates every cached cell, so a refresh re-rendered all the
    # visible rows' cells, most of a refresh's UI time. Body lines are instead built here,
    # through the public Line API (render_lines/render_line), from our own per-cell cache:
    # a cell re-renders only when its value, its text (LiveCell), its row position or the
    # cursor/hover/styles change, and only columns in view are rendered. The segments are
    # the stock ones (same styles, same mouse meta, same padding and cropping), so the
    # screen is byte-identical; the header and anything unusual take the stock path.

    def render_lines(self, crop: Region) -> list[Strip]:
        self._paint = None  # styles are read once per paint, not once per line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        header = self.header_height if self.show_header else 0
        row_index = y - header + self.scroll_offset.y
        if (y < header or not 0 <= row_index < len(self._order) or self.cursor_type != "row"
                or self.fixed_rows or self.row_count != len(self._order)):
            return super().render_line(y)
        key = self._order[row_index]
        cells = self._lit_cells.get(key) or self._cells.get(key)
        if cells is not None:
            cells = self._project(cells)
        if cells is None or len(cells) != len(self.columns):
            return super().render_line(y)
        paint = self._paint or self._paint_context()
        width = self.size.width
        on_cursor = paint.show_cursor and self.cursor_row == row_index
        on_hover = paint.show_cursor and self.hover_shown and self.hover_row == row_index
        state = (row_index, on_cursor, on_hover, paint)  # with the cell's width, all a cell's look depends on
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        # The frozen columns (NAME) first, as DataTable lays them out: then every column,
        # cropped from the scroll offset past the frozen width.
        fixed: list[Segment] = []
        for column_index in range(min(self.fixed_columns, len(cells))):
            rendered = self._cell_segments(key, column_index, cells[column_index], widths[column_index], state,
                                           paint, fixed=True)
            if rendered is None:
                return super().render_line(y)
            fixed += rendered
        fixed_width = sum(widths[: self.fixed_columns])
        x1 = self.scroll_offset.x + fixed_width
        x2 = self.scroll_offset.x + width
        segments: list[Segment] = []
        start = x = 0
        for column_index, (value, column_width) in enumerate(zip(cells, widths, strict=False)):
            if x + column_width <= x1:
                x += column_width
                start = x
                continue
            if x >= x2:
                break
            rendered = self._cell_segments(key, column_index, value, column_width, state, paint)
            if rendered is None:
                return super().render_line(y)
            segments += rendered
            x += column_width
        else:
            if width > x:  # as DataTable: no blank at all when the columns fill the width exactly
                segments.append(Segment(" " * (width - x), paint.extend_style(row_index, on_cursor, on_hover)))
        line = Strip(fixed + list(Strip(segments).crop(x1 - start, x2 - start)))
        return line.adjust_cell_length(width, paint.base_style).simplify()

    def _cell_segments(
        self, key: str, column_index: int, value: Any, width: int, state: tuple[Any, ...], paint: _Paint,
        fixed: bool = False,
    ) -> list[Segment] | None:
        live = value.plain if isinstance(value, LiveCell) else None
        cache_key = (key, -1 - column_index if fixed else column_index)
        cached = self._rendered.get(cache_key)
        if cached is not None and cached[0] is value and cached[1] == live and cached[2] == (*state, width):
            return cached[3]
        text = value.text() if isinstance(value, LiveCell) else value
        if not isinstance(text, Text) or text.overflow == "ignore" or "\n" in text.plain or "\t" in text.plain:
            return None  # not a one-line Text: the stock path lays it out
        row_index, on_cursor, on_hover, _ = state
        component_style, post_style = paint.cell_styles(on_cursor, on_hover, fixed)
        base = paint.fixed_style if fixed else paint.base_style
        pre_style = base + Style.from_meta({"row": row_index, "column": column_index}) + component_style
        padding = paint.cell_padding
        inner = max(0, width - 2 * padding)
        body = text.copy()
        body.truncate(inner, overflow=text.overflow or "fold")  # Rich's default, as the stock path
        console = self.app.console
        rendered = body.render(console)  # spans only: the Text's own style is applied next
        if body.style:
            rendered = Segment.apply_style(rendered, console.get_style(body.style))
        pad = Segment(" " * padding)
        fill = Segment(" " * (inner - body.cell_len))  # unstyled, as Rich pads a cell
        segments = list(Segment.apply_style([pad, *rendered, fill, pad], pre_style, post_style))
        self._rendered[cache_key] = (value, live, (*state, width), segments)
        return segments

    def _paint_context(self) -> _Paint:
        self._paint = _Paint(
            base_style=self.rich_style,
            cursor_style=self.get_component_rich_style("datatable--cursor"),
            hover_style=self.get_component_rich_style("datatable--hover"),
            show_cursor=self.show_cursor,
            css_foreground=self.cursor_foreground_priority == "css",
            css_background=self.cursor_background_priority == "css",
            cell_padding=self.cell_padding,
            fixed_style=self.get_component_rich_style("datatable--fixed") + Style.from_meta({"fixed": True}),
            fixed_cursor_style=self.get_component_rich_style("datatable--fixed-cursor"),
        )
        return self._paint

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._paint = None
        self._rendered.clear()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        # The faint hover highlight follows the mouse until a key is pressed, as DataTable's.
        self._set_hover_shown(bool(event.style.meta))

    def on_click(self, event: events.Click) -> None:
        self._set_hover_shown(True)
        self.to_end = False

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover_shown(False)

    def on_key(self, event: events.Key) -> None:
        self._set_hover_shown(False)
        self.to_end = False  # any key but G/End (its action runs after this and sets it again)

    def mark_sort(self, key: str | None, descending: bool) -> None:
        """The header says which column sorts the list, and which way (↑ ascending)."""
        self.sorted_by = (key, descending)
        for column in self.columns.values():
            spec = next((c for c in self.column_specs if c.key == column.key.value), None)
            if spec is not None:
                arrow = (" ↓" if descending else " ↑") if spec.key == key else ""
                column.label = Text(spec.label + arrow)
        self.notify_style_update()  # the header's cached cells
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._refit()
        # Shrunk: the selected row (the one the summary line describes) must stay in view.
        self.call_after_refresh(self._cursor_into_view)

    def _cursor_into_view(self) -> None:
        # Vertically only (rows are one line): DataTable's own scroll-into-view also nudges
        # the view sideways past the frozen column.
        rows = self.scrollable_content_region.height - (self.header_height if self.show_header else 0)
        top, row = int(self.scroll_y), self.cursor_row
        if rows <= 0 or row < 0:
            return
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + rows:
            self.scroll_to(y=row - rows + 1, animate=False, immediate=True)

    # --- sideways -------------------------------------------------------------------------
    # The columns past the frozen one(s), as scroll offsets: column n is right beside the
    # frozen name when the view is scrolled to its start.

    def _starts(self) -> list[tuple[int, int]]:
        """(column index, its start as a scroll offset) of each column that scrolls."""
        starts, x = [], 0
        for index in self.column_layout.order[self.fixed_columns:]:
            starts.append((index, x))
            x += self.column_layout.widths[index] + 2 * self.cell_padding
        return starts

    def _column_in_view(self) -> int | None:
        """The column at the left edge of the view (beside the frozen one); None: not scrolled."""
        x = self.scroll_offset.x
        if x <= 0:
            return None
        return next((index for index, start in reversed(self._starts()) if start <= x), None)

    def _restore_view(self, anchor: int | None, top: int) -> None:
        """Scroll back to `top` (a row) and to the column `anchor` at the left edge, in the
        new layout. The virtual size is set now (DataTable sets the same when idle): a
        scroll is clamped to it."""
        header = self.header_height if self.show_header else 0
        width = sum(column.get_render_width(self) for column in self.columns.values())
        self.virtual_size = Size(width, header + self.row_count)
        x = dict(self._starts()).get(anchor, 0) if anchor is not None else 0
        self.scroll_to(x=x, y=top, animate=False, immediate=True)
        self._cursor_into_view()

    def action_cursor_right(self) -> None:
        """The next column into view, beside the frozen one (DataTable scrolls one cell)."""
        x = self.scroll_offset.x
        after = [start for _, start in self._starts() if start > x]
        if after:
            self.scroll_to(x=min(after[0], self.max_scroll_x), animate=False, immediate=True)

    def action_cursor_left(self) -> None:
        """The previous column back into view."""
        x = self.scroll_offset.x
        before = [start for _, start in self._starts() if start < x]
        self.scroll_to(x=before[-1] if before else 0, animate=False, immediate=True)

    def action_toggle_wide(self) -> None:
        """w: every column as wide as its whole content (scrolled sideways), or back to
        fitted to the terminal. The cursor, the selection and the column in view stay."""
        self.wide = not self.wide
        self._relayout([(key, self._cells[key]) for key in self._order], self._layout())

    class EdgeRequested(Message):
        """g or G: the first or the last row of the whole list was asked for. A paged list
        whose end is not loaded reads its last page (G), and its first again (g)."""

        def __init__(self, table: KeyedTable, last: bool) -> None:
            super().__init__()
            self.table = table
            self.last = last

        @property
        def control(self) -> KeyedTable:
            return self.table

    def action_first_row(self) -> None:
        self.post_message(self.EdgeRequested(self, last=False))
        if self.row_count:
            self.move_cursor(row=0, animate=False)

    def action_last_row(self) -> None:
        """The last row of the whole list, not of the loaded page: on a paged list its owner
        loads the rest or the last page (`to_end`, EdgeRequested), and every page that lands
        moves the cursor on to its end."""
        self.to_end = True
        self.post_message(self.EdgeRequested(self, last=True))
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def _set_hover_shown(self, shown: bool) -> None:
        if shown != self.hover_shown:
            self.hover_shown = shown
            self.refresh_row(self.hover_row)

    def _rebuild(self, rows: Sequence[Row]) -> None:
        self.clear()
        self._cells = {}
        self._rendered.clear()
        for key, cells in rows:
            self.add_row(*self._project(self._lit_cells.get(key, cells)), key=key)
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


def _is_lit(lit: dict[str, frozenset[int] | None], key: str, index: int) -> bool:
    if key not in lit:
        return False
    columns = lit[key]
    return columns is None or index in columns
