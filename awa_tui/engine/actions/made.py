"""An operator's schedules made at run time (S64), from the console: the request its form
fills, and the calls `Actions` makes with it. The work itself, its checks and its audit
are ownership/api_schedules.py's, as for the API and `awa-tui cron create/edit/delete`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from awa_tui.engine.core.db import ConnectionSource
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.ownership import api_schedules as made
from awa_tui.engine.schedules.definition import built

if TYPE_CHECKING:
    from awa_tui.engine.schedules.definition import Schedule

# A request's field -> `Schedule.build`'s parameter, where the names differ.
_BUILD_NAMES = {"cron": "cron_expr"}


@dataclass(frozen=True)
class ScheduleRequest:
    """A run-time schedule's settings as an operator gives them. None: the default when
    creating, the stored value when editing."""

    cron: str | None = None
    kind: str | None = None
    timezone: str | None = None
    queue: str | None = None
    args: dict[str, Any] | None = None
    priority: int | None = None
    max_attempts: int | None = None
    missed_fire_policy: str | None = None
    overlap: str | None = None
    tags: tuple[str, ...] | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    max_fires: int | None = None
    jitter: timedelta | None = None
    exclude: tuple[date | tuple[date, date], ...] | None = None  # days, and inclusive (first, last) ranges
    calendar: tuple[str, ...] | None = None
    # An edit's optional settings taken away (as `cron edit --clear`): each then has no value.
    cleared: tuple[str, ...] = ()

    def settings(self) -> dict[str, Any]:
        """The given settings by `Schedule.build`'s names (cron -> cron_expr); a cleared one
        is None (the value a create without it stores)."""
        given = {_BUILD_NAMES.get(f.name, f.name): getattr(self, f.name) for f in fields(self)
                 if f.name != "cleared" and getattr(self, f.name) is not None}
        for name in self.cleared:
            if name not in CLEARABLE:
                raise ValidationError(f"{name}: not a setting that can be taken away (one of {', '.join(CLEARABLE)})")
            if name in given:
                raise ValidationError(f"{name}: given a value and taken away; one of them")
            given[name] = None
        return given


# The optional settings an edit can take away (ScheduleRequest.cleared).
CLEARABLE = ("start_at", "end_at", "max_fires", "jitter", "exclude", "calendar")


def create(db: ConnectionSource, name: str, request: ScheduleRequest, owner: str | None, operator: str,
           max_lateness: int | None, *, dry_run: bool) -> Schedule:
    """Make one schedule (a dry run checks everything and writes nothing); the definition."""
    settings = request.settings()
    for required in ("cron_expr", "kind"):
        if required not in settings:
            raise ValidationError(f"{required}: required to create a schedule")
    schedule = built(max_lateness, name, settings.pop("cron_expr"), settings.pop("kind"), settings.pop("args", None),
                     **settings)
    return made.create_one(db, None, owner or made.DEFAULT_OWNER, operator, schedule, dry_run=dry_run,
                           operator_action=True)


def edit(db: ConnectionSource, name: str, request: ScheduleRequest, operator: str, max_lateness: int | None, *,
         dry_run: bool) -> Schedule:
    """Change the settings `request` gives of one run-time schedule; the definition after."""
    return made.edit_one(db, None, name, request.settings(), None, operator, max_lateness, dry_run=dry_run,
                         operator_action=True)


def delete(db: ConnectionSource, name: str, operator: str, *, dry_run: bool) -> int:
    """Delete one run-time schedule (never one declared in code); how many (1)."""
    return made.delete_many(db, None, [name], None, operator, dry_run=dry_run, operator_action=True)
