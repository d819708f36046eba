"""What panels and screens ask of the console app. They post these messages (they bubble
up to the app) instead of calling app methods: requests flow up, data flows down (the
app calls `show` on panels, or the callback a request carries). The app handles each
one in `on_<message name>`.

The five schedule actions are here too, once, for the schedules panel and the detail
screen alike.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.text import Text
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from awa_tui.engine.actions.made import ScheduleRequest
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.read.models import AnySchedule
from awa_tui.filters import Filter
from awa_tui.printable import printable
from awa_tui.tui import operations
from awa_tui.tui.operations import NotPossible, Operation

if TYPE_CHECKING:
    from awa_tui.tui.app import ConsoleApp

Show = Callable[[Any, str | None], None]  # (data, error) back on the UI thread


class OperationRequested(Message):
    """Confirm, then run, this operation; `after` runs once it is done (or failed)."""

    def __init__(self, operation: Operation, after: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.operation = operation
        self.after = after


class RefreshRequested(Message):
    """Poll now (`soon`: once typing pauses)."""

    def __init__(self, soon: bool = False) -> None:
        super().__init__()
        self.soon = soon


class DetailRequested(Message):
    """Open the detail screen of this schedule."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class DetailDataRequested(Message):
    """Read this schedule's detail on the reader thread and pass it to `show`."""

    def __init__(self, name: str, show: Show) -> None:
        super().__init__()
        self.name = name
        self.show = show


class AuditDataRequested(Message):
    """Search the audit log on the reader thread (an audit filter, a page of `limit` entries
    older than `before_id`, or the `oldest` page) and pass the page to `show`."""

    def __init__(self, show: Show, where: Filter | None = None, before_id: int | None = None,
                 limit: int = 200, oldest: bool = False) -> None:
        super().__init__()
        self.show = show
        self.where = where
        self.before_id = before_id
        self.limit = limit
        self.oldest = oldest


class AlertsDataRequested(Message):
    """Read the alerts screen's data on the reader thread (the open alerts' deliveries, at
    most `limit`, and the silences in force) and pass it to `show`."""

    def __init__(self, show: Show, limit: int) -> None:
        super().__init__()
        self.show = show
        self.limit = limit


class AuditEntryRequested(Message):
    """Open one audit entry in full, on its own screen."""

    def __init__(self, entry_id: int) -> None:
        super().__init__()
        self.entry_id = entry_id


class AuditRecordRequested(Message):
    """Read one audit entry in full on the reader thread and pass it to `show`."""

    def __init__(self, entry_id: int, show: Show) -> None:
        super().__init__()
        self.entry_id = entry_id
        self.show = show


class RuntimeEventsRequested(Message):
    """Open one runtime's recent events, on their own screen."""

    def __init__(self, instance_id: str) -> None:
        super().__init__()
        self.instance_id = instance_id


class RuntimeEventsDataRequested(Message):
    """Read one runtime's recent events on the reader thread and pass them to `show`."""

    def __init__(self, instance_id: str, show: Show) -> None:
        super().__init__()
        self.instance_id = instance_id
        self.show = show


class NextFiresRequested(Message):
    """Read the next `count` fires of this schedule after `after` (excluded instants listed
    besides) on the reader thread and pass them to `show`."""

    def __init__(self, name: str, after: datetime, count: int, show: Show) -> None:
        super().__init__()
        self.name = name
        self.after = after
        self.count = count
        self.show = show


class CalendarRequested(Message):
    """Read one calendar in full (its dates, the schedules naming it) on the reader thread
    and pass it to `show`."""

    def __init__(self, name: str, show: Show) -> None:
        super().__init__()
        self.name = name
        self.show = show


class CalendarNamesRequested(Message):
    """Read the calendars' names (the schedule form suggests them) on the reader thread and
    pass them to `show`."""

    def __init__(self, show: Show) -> None:
        super().__init__()
        self.show = show


class LedgerDataRequested(Message):
    """Read this schedule's ledger (its last due instants' verdicts) and the `why` of the
    instant `at` (None: the latest) on the reader thread, and pass them to `show`."""

    def __init__(self, name: str, at: datetime | None, show: Show) -> None:
        super().__init__()
        self.name = name
        self.at = at
        self.show = show


class JobDetailRequested(Message):
    """Open the detail screen of this job."""

    def __init__(self, job_id: int) -> None:
        super().__init__()
        self.job_id = job_id


class JobDataRequested(Message):
    """Read this job's detail on the reader thread and pass it to `show`."""

    def __init__(self, job_id: int, show: Show) -> None:
        super().__init__()
        self.job_id = job_id
        self.show = show


class JobsFilterRequested(Message):
    """Show the jobs panel filtered by this filter text (v on a schedule)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class OwnersSeen(Message):
    """Owner names a panel saw, offered when adopting or transferring."""

    def __init__(self, owners: tuple[str, ...]) -> None:
        super().__init__()
        self.owners = owners


class InfoRequested(Message):
    """Show this page (InfoScreen) over the panels: a row's full text."""

    def __init__(self, title: str, body: RenderableType) -> None:
        super().__init__()
        self.title = title
        self.body = body


class SchedulesFilterRequested(Message):
    """Show the schedules panel filtered by this filter text (enter on an owner, a queue)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class SortMenuRequested(Message):
    """Offer these (column key, label) sorts; `chosen` gets the picked key (None: kept)."""

    def __init__(self, options: list[tuple[str, str]], current: str | None,
                 chosen: Callable[[str | None], None]) -> None:
        super().__init__()
        self.options = options
        self.current = current
        self.chosen = chosen


class OverrideFormRequested(Message):
    """Show the override form for this schedule (S49); `filled` gets the request
    (None: cancelled)."""

    def __init__(self, row: AnySchedule, filled: Callable[[OverrideRequest | None], None]) -> None:
        super().__init__()
        self.row = row
        self.filled = filled


class ScheduleFormRequested(Message):
    """Show the schedule form (S64): a new schedule made at run time (`row` None), or an
    edit of this one; `filled` gets what the operator confirmed there (None: cancelled)."""

    def __init__(self, row: AnySchedule | None, filled: Callable[[Any], None]) -> None:
        super().__init__()
        self.row = row
        self.filled = filled


class ScheduleCheckRequested(Message):
    """Check a definition as its create (or the edit of `edit_of`) would, writing nothing
    (a dry run), on the reader thread, and pass `show` its next `count` fires and the
    clock they were read at, or the one line that refuses it. `fired`: the scheduled fires
    the edited schedule has made (its max fires counts them)."""

    def __init__(self, name: str, request: ScheduleRequest, owner: str | None, edit_of: str | None, count: int,
                 show: Show, fired: int = 0) -> None:
        super().__init__()
        self.name = name
        self.request = request
        self.owner = owner
        self.edit_of = edit_of
        self.count = count
        self.show = show
        self.fired = fired


class RawRequested(Message):
    """Show this row's read model raw (RawScreen, `y`): `what` names the row."""

    def __init__(self, what: str, model: Any) -> None:
        super().__init__()
        self.what = what
        self.model = model


class CopyRequested(Message):
    """Copy this value to the terminal's clipboard (OSC 52) and say what was copied."""

    def __init__(self, what: str, value: str) -> None:
        super().__init__()
        self.what = what
        self.value = value


class MutationKeyPressed(Message):
    """A key pressed in `scope` that no binding took: if it is an action that read-only
    mode removed, the app says why."""

    def __init__(self, scope: str, key: str) -> None:
        super().__init__()
        self.scope = scope
        self.key = key


class PanelsResumed(Message):
    """The panels are on top again: show the data that arrived under a dialog."""


def usable_reply(widget: Widget, place: str, error: str | None, what: str) -> bool:
    """Whether a reply to a *DataRequested is to be shown: not if its widget closed before
    the data arrived, nor if it is an error (then said, escaped, in the `place` Static)."""
    if not widget.is_attached or not widget.query(place):  # closed, or closing: children go first
        return False
    if error:
        widget.query_one(place, Static).update(Text(printable(f"{what}: {error}")))
        return False
    return True


def request_operation(widget: Widget, build: Callable[[], Operation | None],
                      after: Callable[[], None] | None = None) -> None:
    """Build the operation from the row under the cursor now, then ask the app to confirm
    it. An action that makes no sense for the row is said at once, with no dialog; None
    (nothing loaded yet) does nothing."""
    try:
        operation = build()
    except NotPossible as exc:
        widget.notify(str(exc), severity="warning", markup=False)
        return
    if operation is not None:
        widget.post_message(OperationRequested(operation, after))


class ScheduleActions(Widget):
    """The schedule actions (keys from actions.py), for the schedules panel and the detail
    screen. A subclass says which row they act on, and what to do once one is done."""

    def acted_schedule(self) -> AnySchedule | None:
        """The schedule acted on; None when nothing is loaded; NotPossible when none is chosen."""
        raise NotImplementedError

    def after_operation(self) -> None:
        """Runs once an operation of this widget is done (or failed)."""

    def _on_schedule(self, make: Callable[[AnySchedule], Operation]) -> None:
        def build() -> Operation | None:
            row = self.acted_schedule()
            return None if row is None else make(row)

        request_operation(self, build, self.after_operation)

    def action_toggle_pause(self) -> None:
        self._on_schedule(operations.toggle_pause)

    def action_trigger(self) -> None:
        self._on_schedule(operations.trigger)

    def action_adopt(self) -> None:
        console: ConsoleApp = self.app  # type: ignore[assignment]
        self._on_schedule(lambda row: operations.adopt_or_transfer(row, console.known_owners))

    def action_backfill(self) -> None:
        self._on_schedule(operations.backfill)

    def action_retire(self) -> None:
        self._on_schedule(operations.retire)

    def action_restore(self) -> None:
        self._on_schedule(operations.restore)

    def action_override(self) -> None:
        """S49: the override form, then the usual confirmation."""
        try:
            row = self.acted_schedule()
        except operations.NotPossible as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        if row is None:
            return
        if row.state == "retired":
            self.notify(f"{row.name} is RETIRED: restore it before overriding it", severity="warning", markup=False)
            return
        if row.origin == operations.RUN_TIME:  # S64: no code to keep beside it; edited whole
            self._edit_form(row)
            return

        def filled(request: OverrideRequest | None) -> None:
            if request is not None:
                request_operation(self, lambda: operations.override(row, request), self.after_operation)

        self.post_message(OverrideFormRequested(row, filled))

    def action_reset_override(self) -> None:
        self._on_schedule(operations.reset_override)

    def _edit_form(self, row: AnySchedule) -> None:
        """S64: a schedule made at run time in the schedule form, then the usual confirmation."""

        def filled(form: operations.ScheduleForm | None) -> None:
            if form is not None:
                request_operation(self, lambda: operations.edit_schedule(row, form.request), self.after_operation)

        self.post_message(ScheduleFormRequested(row, filled))

    def action_delete_schedule(self) -> None:
        self._on_schedule(operations.delete_schedule)
