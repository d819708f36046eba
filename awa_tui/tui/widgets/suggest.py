"""Completion for a comma-separated list of names (the schedule form's calendars)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.suggester import Suggester


class ListItemSuggester(Suggester):
    """Completes the item being typed after the last comma from `names`; the items before it
    stay as typed. Names are replaced whole when they arrive (from the database, after the
    input exists), so nothing is cached."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.names = sorted(set(names))

    async def get_suggestion(self, value: str) -> str | None:
        head, sep, item = value.rpartition(",")
        typed = item.lstrip()
        if not typed:
            return None
        taken = {t.strip() for t in head.split(",")} if sep else set()
        for name in self.names:
            if name.startswith(typed) and name != typed and name not in taken:
                return value + name[len(typed):]
        return None
