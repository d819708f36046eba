"""The CLI's tables as plain text: a header row, a rule, then one line per row, each column
left-aligned and padded to its widest value.

Nothing is folded, cut or ellipsised: a wide table is simply wider than the terminal (a
pipe or a log must see whole values, and `less -S` scrolls). Rich's Table measured and
wrapped every cell, ~2 s for `cron list`'s 1000 rows on a slow core; this is
string padding.

Every cell arrives as text that went through `printable()` (cli/common.py emit_table):
no control byte can forge a row or drive the terminal, and nothing is read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence

GAP = "  "  # between columns


def cell_width(text: str) -> int:
    """Terminal columns `text` takes: wide (East Asian) characters two, combining marks none."""
    if text.isascii():
        return len(text)
    import unicodedata  # only for text beyond ASCII: most tables never need it

    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> str:
    """The table as lines of text, each ending in a newline; no line has trailing spaces."""
    widths = [cell_width(h) for h in headers]
    measured = [[cell_width(c) for c in row] for row in rows]
    for row_widths in measured:
        for i, w in enumerate(row_widths):
            if w > widths[i]:
                widths[i] = w

    def line(cells: Sequence[str], cell_widths: Sequence[int]) -> str:
        # Padding stops at the last non-empty cell: no line ends in padding, and a value's
        # own characters (trailing spaces too) are all kept.
        end = len(cells)
        while end > 1 and not cells[end - 1]:
            end -= 1
        parts = [cells[i] + " " * (widths[i] - cell_widths[i]) for i in range(end - 1)]
        parts.append(cells[end - 1])
        return GAP.join(parts)

    out = [title] if title else []
    out.append(line(headers, [cell_width(h) for h in headers]))
    out.append(GAP.join("-" * w for w in widths))
    out.extend(line(row, row_widths) for row, row_widths in zip(rows, measured, strict=True))
    return "\n".join(out) + "\n"
