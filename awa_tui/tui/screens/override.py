"""The override form (S49): a schedule's expression, zone, queue, priority and args,
prefilled with the effective values and, while overridden, the code's beside them.

It only collects what changed; the engine validates it (one line, nothing written when
refused) after the usual confirmation dialog."""

from __future__ import annotations

import json

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.widgets import Button, Input, Static

from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.core.errors import ValidationError, short_repr
from awa_tui.engine.read.models import AnySchedule
from awa_tui.printable import printable
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.screens.dialog import YesNoDialog

# (input id, label)
FIELDS = (
    ("cron", "Cron (H allowed)"),
    ("timezone", "Time zone"),
    ("queue", "Queue"),
    ("priority", "Priority (1-4)"),
    ("args", "Args (JSON object)"),
)


def start_values(row: AnySchedule) -> dict[str, str]:
    """What each field starts from: the effective values, the expression as written.
    Args are not loaded in the list: empty leaves them as they are."""
    return {"cron": row.cron_written or row.cron_expr, "timezone": row.timezone, "queue": row.queue,
            "priority": str(row.priority), "args": ""}


class OverrideScreen(YesNoDialog[OverrideRequest]):
    """Dismisses with the request (only the changed values) or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "cancel", key_display="esc")]

    def __init__(self, row: AnySchedule) -> None:
        super().__init__()
        self.row = row
        self.start = start_values(row)

    def compose(self) -> ComposeResult:
        row = self.row
        with Vertical(id="dialog"):
            yield Static(Text(f"Override schedule {printable(row.name)}", style="bold"), id="dialog-title")
            code = row.overridden or {}
            # S64: the one way a code-declared schedule changes without a deploy (the schedule
            # form is for those made at run time, which have no code to keep beside them).
            lines = [("Kind", "Declared in code: changed by an override (this form), not the schedule form"),
                     ("Effective", f"{row.cron_expr} {row.timezone}, queue {row.queue}, priority {row.priority}")]
            if code:
                lines.append(("Code", ", ".join(f"{k} {v}" for k, v in sorted(code.items()) if k != "cron_written")))
            lines.append(("Keeps", "sync never overwrites an override; reset (E) returns to the code"))
            yield Static(facts(lines), id="dialog-facts")
            with Grid(id="override-fields"):
                for key, label in FIELDS:
                    yield Static(Text(f"{label}:"))
                    yield Input(printable(self.start[key]), id=f"override-{key}",
                                placeholder="unchanged" if key == "args" else "")
            yield Static(id="dialog-error")
            with Horizontal(id="dialog-buttons"):
                yield Button(Text("Override [enter]"), id="yes", variant="error")
                yield Button(Text("Cancel [esc]"), id="no")

    def on_mount(self) -> None:
        self.query_one("#override-cron", Input).focus()

    def request(self) -> OverrideRequest:
        """What changed, parsed; raises ValidationError (shown in the dialog)."""
        typed = {key: self.query_one(f"#override-{key}", Input).value.strip() for key, _ in FIELDS}
        changed = {key: value for key, value in typed.items()
                   if value != printable(self.start[key]) and (key != "args" or value)}
        priority = None
        if "priority" in changed:
            try:
                priority = int(changed["priority"])
            except ValueError:
                raise ValidationError(
                    f"priority: must be an integer 1..4, got {short_repr(changed['priority'])}") from None
        args = None
        if "args" in changed:
            try:
                args = json.loads(changed["args"])
            except json.JSONDecodeError as exc:
                raise ValidationError(f"args: not valid JSON ({exc.msg}): {short_repr(changed['args'])}") from None
        request = OverrideRequest(cron=changed.get("cron"), timezone=changed.get("timezone"),
                                  queue=changed.get("queue"), priority=priority, args=args)
        request.changes()  # nothing changed: said here
        return request

    def action_confirm(self) -> None:
        try:
            request = self.request()
        except ValidationError as exc:
            self.query_one("#dialog-error", Static).update(Text(printable(str(exc)), style="bold"))
            return
        self.dismiss(request)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_confirm()
