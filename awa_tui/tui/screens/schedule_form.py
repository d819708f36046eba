"""The schedule form (S64): a new schedule made at run time (n), or the edit of one (e on
it). Its fields mirror `awa-tui cron create`'s flags, read as the CLI reads them (instants,
durations, excluded days); the rest (metadata, expectations) keep their defaults (create)
or stored values (edit). An edit's optional field emptied takes the setting away, as
`cron edit --clear` does.

As the operator types, each value is checked, first here (JSON, numbers), then as the
create or edit would check it (a dry run: expression, zone, policies, a taken name),
and the line that refuses it shows under its field; a definition that passes shows its
next fires with their DST marks and excluded instants, as the detail screen does. Enter
hands the form to the usual confirmation (operations.create_schedule / edit_schedule)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Button, Input, Static

from awa_tui.engine.actions.made import CLEARABLE, ScheduleRequest  # CLEARABLE: an edit empties them to take them away
from awa_tui.engine.core.errors import ValidationError, short_repr
from awa_tui.engine.cron.describe import describe
from awa_tui.engine.read.models import AnySchedule, NextFire, ScheduleDetail, ScheduleInfo
from awa_tui.instants import duration_text, parse_days, parse_duration, parse_instant
from awa_tui.printable import printable
from awa_tui.tui.formatting import utc
from awa_tui.tui.messages import CalendarNamesRequested, DetailDataRequested, ScheduleCheckRequested, usable_reply
from awa_tui.tui.operations import ScheduleForm
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.screens.detail import SHORT_DST_WORDS, fires_table
from awa_tui.tui.screens.dialog import YesNoDialog
from awa_tui.tui.widgets.suggest import ListItemSuggester

_MILLIS = re.compile(r"(\d{1,9})ms")  # a jitter the API stored below whole seconds

# (input id, label, placeholder); name and owner only when creating.
FIELDS = (
    ("name", "Name", "e.g. reports.tenant-42"),
    ("cron", "Cron (H allowed)", "e.g. 0 8 * * 1"),
    ("timezone", "Time zone", "UTC"),
    ("kind", "Job kind", "the handler's kind"),
    ("queue", "Queue", "default"),
    ("args", "Args (JSON object)", "{}"),
    ("priority", "Priority (1-4)", "2"),
    ("max_attempts", "Max attempts", "25"),
    ("missed_fire_policy", "Missed fires", "coalesce | catch_up"),
    ("overlap", "Overlap", "allow | skip | buffer_one | replace"),
    ("tags", "Tags (a, b)", "none"),
    ("start_at", "Start at", "no fire before (ISO-8601)"),
    ("end_at", "End at", "no fire after (ISO-8601)"),
    ("max_fires", "Max fires", "no limit"),
    ("jitter", "Jitter", "none (e.g. 90s, 5m)"),
    ("exclude", "Excluded days", "e.g. 2026-12-25, 2026-12-20..2027-01-03"),
    ("calendar", "Calendars (a, b)", "none"),
    ("owner", "Owner", "app"),
)
CREATE_ONLY = ("name", "owner")
# What a new schedule starts from: `Schedule.build`'s defaults, shown.
DEFAULTS = {"timezone": "UTC", "queue": "default", "priority": "2", "max_attempts": "25",
            "missed_fire_policy": "coalesce", "overlap": "allow", "owner": "app"}
# The engine names the setting a refusal is about first ("cron_expr: ..."): its field here.
ENGINE_NAMES = {"cron_expr": "cron"}
CHECK_DELAY_S = 0.3  # after the last keystroke: one dry run per pause in typing, not per key
PREVIEW_COUNT = 5


def start_values(row: ScheduleInfo | None) -> dict[str, str]:
    """What each field starts from: the defaults, or the stored definition (the expression
    as written)."""
    if row is None:
        return dict(DEFAULTS)
    return {"cron": row.cron_written or row.cron_expr, "timezone": row.timezone, "kind": row.kind,
            "queue": row.queue, "args": json.dumps(row.args if row.args is not None else {}, sort_keys=True),
            "priority": str(row.priority), "max_attempts": str(row.max_attempts),
            "missed_fire_policy": row.missed_fire_policy, "overlap": row.overlap,
            "tags": ", ".join(row.tags or []), "start_at": _instant_text(row.start_at),
            "end_at": _instant_text(row.end_at), "max_fires": "" if row.max_fires is None else str(row.max_fires),
            "jitter": _jitter_text(row.jitter_ms),
            "exclude": ", ".join(a if a == b else f"{a}..{b}" for a, b in row.exclude_dates or []),
            "calendar": ", ".join(row.exclude_calendars or [])}


def _instant_text(at: datetime | None) -> str:
    if at is None:
        return ""
    return utc(at) if not at.microsecond else at.isoformat()  # as typed back, exactly


def _jitter_text(ms: int) -> str:
    if not ms:
        return ""
    return duration_text(ms // 1000) if not ms % 1000 else f"{ms}ms"  # the API takes milliseconds; the form seconds


def _jitter(text: str) -> timedelta:
    """A jitter as the form shows it: a duration, or whole milliseconds (`1500ms`, as the
    API may have stored it), so a stored value reads back as itself."""
    millis = _MILLIS.fullmatch(text.strip().lower())
    return timedelta(milliseconds=int(millis.group(1))) if millis else parse_duration(text, "jitter")


def _names(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _integer(key: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"{key}: a whole number, got {short_repr(text)}") from None


def _parsed(key: str, text: str) -> Any:
    """A field's text as the setting's value; ValidationError names the field."""
    if key == "args":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"args: not valid JSON ({exc.msg}): {short_repr(text)}") from None
    if key in ("priority", "max_attempts", "max_fires"):
        return _integer(key, text)
    if key in ("tags", "calendar"):
        return _names(text)
    if key in ("start_at", "end_at"):
        return parse_instant(text, key)  # as `cron create --start-at` reads it: a bare one is UTC
    if key == "jitter":
        return _jitter(text)
    if key == "exclude":
        return tuple(parse_days(list(_names(text)), key))
    return text


def _same(key: str, value: Any, start: str) -> bool:
    """Whether `value` is what the field started from (stored text the form cannot read,
    such as a jitter in milliseconds, is never the same)."""
    try:
        return bool(value == _parsed(key, start))
    except ValidationError:
        return False


def field_of(error: str, fields: tuple[str, ...]) -> tuple[str | None, str]:
    """The field a one-line refusal is about ("timezone: unknown time zone ...") and the
    words without the setting's name (they show under its field); None: the whole form."""
    head, sep, rest = error.partition(": ")
    key = ENGINE_NAMES.get(head, head)
    if sep and key in fields:
        return key, rest
    return None, error


class ScheduleFormScreen(YesNoDialog[ScheduleForm]):
    """Dismisses with the form (an edit: only the settings changed) or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "cancel", key_display="esc")]

    def __init__(self, row: AnySchedule | None = None) -> None:
        super().__init__()
        self.row = row  # None: a new schedule
        self.stored: ScheduleInfo | None = None  # an edit's definition, once read
        self.start = start_values(None) if row is None else {}
        self.fields = tuple(f for f in FIELDS if row is None or f[0] not in CREATE_ONLY)
        self.keys = tuple(key for key, _, _ in self.fields)
        self.checked: tuple[Any, ...] | None = None  # the values the shown verdict is about
        self.passed = False  # whether they passed the last check
        self.confirming = False  # enter was pressed while a check ran: confirm if it passes
        self.sequence = 0  # the newest check asked; older replies are dropped
        self.timer: Timer | None = None
        self.said_missing = False  # enter was pressed with a required field empty
        self.now: datetime | None = None

    @property
    def editing(self) -> bool:
        return self.row is not None

    def compose(self) -> ComposeResult:
        row = self.row
        with Vertical(id="dialog", classes="schedule-form"):
            title = "New schedule (made at run time)" if row is None else f"Edit schedule {printable(row.name)}"
            yield Static(Text(title, style="bold"), id="dialog-title")
            kind = ("made at run time: code sync never changes it" if row is None else
                    f"made at run time, owner {row.owner or '-'}: the values shown are stored; the changed ones "
                    "are written")
            verb = "create" if row is None else "edit"
            yield Static(facts([("Kind", kind),
                                ("Checked", f"as you type, as the {verb} would (nothing written until confirmed)")]),
                         id="dialog-facts")
            with VerticalScroll(id="form-body"):
                for key, label, placeholder in self.fields:
                    with Horizontal(classes="form-row"):
                        yield Static(Text(f"{label}:"), classes="form-label")
                        yield Input(printable(self.start.get(key, "")), id=f"form-{key}", placeholder=placeholder,
                                    disabled=self.editing)  # an edit's inputs open once its definition is read
                    yield Static(id=f"form-{key}-error", classes="field-error")
                yield Static(id="form-preview")
            yield Static(id="dialog-error")
            with Horizontal(id="dialog-buttons"):
                yield Button(Text("Edit [enter]" if self.editing else "Create [enter]"), id="yes", variant="error")
                yield Button(Text("Cancel [esc]"), id="no")

    def on_mount(self) -> None:
        for key in self.keys:
            self.query_one(f"#form-{key}-error", Static).display = False
        self.query_one("#form-calendar", Input).suggester = ListItemSuggester()
        self.post_message(CalendarNamesRequested(self._calendar_names))
        if self.row is None:
            self.query_one("#form-name", Input).focus()
            self._preview(Text("Next fires: once the cron expression and kind are given.", style="dim"))
        else:
            self._preview(Text("loading the stored definition…", style="dim"))
            self.post_message(DetailDataRequested(self.row.name, self._loaded))

    def _calendar_names(self, names: list[str] | None, error: str | None) -> None:
        """Suggested in the calendars field (right accepts); none when they cannot be read
        (upstream has no calendars): the field still takes what is typed."""
        if names and not error and self.is_attached:
            suggester = self.query_one("#form-calendar", Input).suggester
            if isinstance(suggester, ListItemSuggester):
                suggester.names = sorted(printable(n) for n in names)

    def _loaded(self, data: ScheduleDetail | None, error: str | None) -> None:
        if not usable_reply(self, "#form-preview", error, "the stored definition"):
            return
        assert data is not None
        self.stored, self.now = data.schedule, data.now
        self.start = start_values(data.schedule)
        for key in self.keys:
            box = self.query_one(f"#form-{key}", Input)
            with box.prevent(Input.Changed):  # the stored values are no change to check
                box.value = printable(self.start[key])
            box.disabled = False
        self.query_one("#form-cron", Input).focus()
        self._show_fires(data.next, data.schedule, "Next fires as stored")

    # --- what was typed -------------------------------------------------------------------------

    def typed(self) -> dict[str, str]:
        return {key: self.query_one(f"#form-{key}", Input).value.strip() for key in self.keys}

    def parse(self) -> tuple[ScheduleForm | None, dict[str, str]]:
        """The form as typed: its request (an edit: only what changed), or each field's
        one-line problem."""
        values: dict[str, Any] = {}
        errors: dict[str, str] = {}
        cleared: list[str] = []
        for key, text in self.typed().items():
            if key in CREATE_ONLY:
                continue
            start = self.start.get(key, "")
            if self.editing and text == printable(start):
                continue
            if not text and not self.editing:
                continue  # a new schedule's empty field has its default (the placeholder shows it)
            if not text and key in CLEARABLE:
                cleared.append(key)  # an edit's optional setting emptied: taken away
                continue
            try:
                value = _parsed(key, text)
            except ValidationError as exc:
                errors[key] = field_of(str(exc), self.keys)[1]
                continue
            if self.editing and start and _same(key, value, start):
                continue  # the same value written another way (JSON spaced, an instant's offset): no change
            values[key] = value
        if errors:
            return None, errors
        typed = self.typed()
        name = self.row.name if self.row is not None else typed["name"]
        owner = None if self.editing else (typed["owner"] or None)
        return ScheduleForm(name, ScheduleRequest(**values, cleared=tuple(cleared)), owner), {}

    def missing(self) -> list[str]:
        """The fields a new schedule cannot do without, still empty."""
        if self.editing:
            return []
        typed = self.typed()
        return [key for key in ("name", "cron", "kind") if not typed[key]]

    # --- checks as you type -------------------------------------------------------------------

    @on(Input.Changed)
    def _changed(self) -> None:
        self.passed, self.checked = False, None
        if self.timer is not None:
            self.timer.stop()
        self.timer = self.set_timer(CHECK_DELAY_S, self.check)

    def check(self) -> None:
        """Check the values now: here first, then by a dry run of the create or edit."""
        if self.timer is not None:
            self.timer.stop()
        self.timer = None
        form, errors = self.parse()
        values = tuple(self.typed().items())
        missing = self.missing()
        if self.said_missing:  # enter was pressed: what is still missing stays said
            errors.update({key: "required" for key in missing})
        self._errors(errors)
        if form is None or missing:
            if missing:  # while typing, the preview waits for them (said once enter is pressed)
                self._preview(Text(f"Next fires: once {', '.join(missing)} given.", style="dim"))
            line = f"{', '.join(missing)}: required to create a schedule" if self.said_missing and missing else None
            self._verdict(values, False, line)
            return
        if self.editing and not form.request.settings():
            self._preview(Text("Nothing changed yet.", style="dim"))
            self._verdict(values, False, "nothing changed: change a value, or esc")
            return
        self.sequence += 1
        sequence = self.sequence

        def shown(reply: tuple[Any, list[NextFire], datetime] | None, error: str | None) -> None:
            if sequence != self.sequence or not self.is_attached:
                return  # a newer check was asked, or the form closed
            self._answered(values, reply, error)

        self.post_message(ScheduleCheckRequested(form.name, form.request, form.owner,
                                                 self.row.name if self.row is not None else None, PREVIEW_COUNT,
                                                 shown, self.stored.fires_count if self.stored is not None else 0))

    def _answered(self, values: tuple[Any, ...], reply: tuple[Any, list[NextFire], datetime] | None,
                  error: str | None) -> None:
        if error is not None:
            key, words = field_of(error, self.keys)
            self._errors({key: words} if key is not None else {})
            self._preview(Text("Next fires: once the values above are accepted.", style="dim"))
            self._verdict(values, False, None if key is not None else error)
            return
        assert reply is not None
        schedule, fires, self.now = reply
        self._errors({})
        self._show_fires(fires, schedule, "Next fires", schedule.cron_written)
        self._verdict(values, True)

    def _verdict(self, values: tuple[Any, ...], passed: bool, line: str | None = None) -> None:
        self.checked, self.passed = values, passed
        self.query_one("#dialog-error", Static).update(Text(printable(line), style="bold") if line else Text(""))
        if self.confirming:
            self.confirming = False
            if passed:
                self.action_confirm()

    def _errors(self, errors: dict[str, str]) -> None:
        for key in self.keys:
            widget = self.query_one(f"#form-{key}-error", Static)
            widget.display = key in errors
            widget.update(Text(f" {printable(errors[key])}", style="bold red") if key in errors else Text(""))

    def _show_fires(self, fires: list[NextFire], schedule: Any, title: str, written: str | None = None) -> None:
        """`schedule`: the definition checked (a Schedule) or stored (a ScheduleInfo)."""
        cron_expr = schedule.cron_expr
        heading = Text.assemble((title, "bold"), f" ({describe(cron_expr)}")
        if written:
            heading.append(f"; {written} resolves to {cron_expr}")
        heading.append(")")
        body: Any = (fires_table(fires, schedule.timezone, self.now, SHORT_DST_WORDS) if fires and self.now is not None
                     else Text("none: it never fires", style="dim"))
        limits = self._limits(schedule)
        self._preview(Group(heading, *([limits] if limits is not None else []), body))

    def _limits(self, schedule: Any) -> Text | None:
        """What bounds the fires shown (start, end, max fires) and delays their jobs (jitter)."""
        parts = []
        if schedule.start_at is not None:
            parts.append(f"none before {utc(schedule.start_at)}")
        if schedule.end_at is not None:
            parts.append(f"none after {utc(schedule.end_at)}")
        if schedule.max_fires is not None:
            fired = self.stored.fires_count if self.stored is not None else 0
            parts.append(f"at most {schedule.max_fires} fires" + (f" ({fired} made)" if fired else ""))
        if schedule.jitter_ms:
            parts.append(f"each job waits up to {_jitter_text(schedule.jitter_ms)} after its fire (jitter)")
        line = "; ".join(parts)
        return Text(line[:1].upper() + line[1:] + ".", style="dim") if parts else None

    def _preview(self, content: Any) -> None:
        self.query_one("#form-preview", Static).update(content)

    # --- confirm ----------------------------------------------------------------------------------

    def action_confirm(self) -> None:
        if self.editing and self.stored is None:
            return  # still reading the stored definition
        if self.missing():
            self.said_missing = True
            self.check()
            return
        if self.checked != tuple(self.typed().items()) or self.timer is not None:
            # Typed since the last check (or it is under way): check now, confirm if it passes.
            self.confirming = True
            self.check()
            return
        if not self.passed:
            self.query_one("#dialog-error", Static).update(
                Text("fix the values marked above first (esc: cancel)", style="bold"))
            return
        form, _ = self.parse()
        assert form is not None
        self.dismiss(form)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_confirm()
