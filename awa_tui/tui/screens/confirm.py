"""Confirmation of every mutation (Posting's ConfirmationModal: y / n / esc, keys written
on the buttons). It names the target, the database, the operator label and the
consequence; a retire asks to type the name; adopt/transfer asks for the owner."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Static

from awa_tui.engine.core.errors import ValidationError
from awa_tui.printable import printable
from awa_tui.tui.operations import Choice, Operation
from awa_tui.tui.screens.dialog import YesNoDialog


def facts(rows: list[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for label, value in rows:
        table.add_row(Text(label), Text(printable(value)))  # targets, owners, who paused: database strings
    return table


class ConfirmScreen(YesNoDialog[str]):
    """Dismisses with the typed value ("" when nothing is asked) or None when cancelled."""

    BINDINGS = [
        Binding("y", "confirm", "yes", key_display="y"),
        Binding("n", "cancel", "no", key_display="n"),
        Binding("escape", "cancel", "cancel", key_display="esc"),
    ]

    def __init__(self, title: str, verb: str, details: list[tuple[str, str]], *,
                 type_to_confirm: str | None = None, ask: str | None = None,
                 suggestions: tuple[str, ...] = (), declared_owners: frozenset[str] | None = None,
                 note: Text | None = None, listed: tuple[str, ...] = (), choices: tuple[Choice, ...] = ()) -> None:
        super().__init__()
        self.choices = choices  # optional values offered besides yes and no (a pause's end and reason)
        self.chosen: dict[str, Any] = {}  # their values, read when confirmed (None: left empty)
        self.listed = tuple(printable(name) for name in listed)  # every target, when the facts name a few
        # Owners some running runtime declares (a manifest): a typed owner outside it is said.
        self.declared_owners = declared_owners
        self.note = note  # a fact computed before asking (what a resume would fire)
        # Shown forms (awa_tui/printable.py): a name holding a control byte is shown, and
        # typed to confirm, with its escapes, e.g. "a\x1bb"; the action still gets the real name.
        self.heading = printable(title)
        self.verb = verb
        self.details = details
        self.type_to_confirm = printable(type_to_confirm) if type_to_confirm else type_to_confirm
        self.ask = ask
        self.suggestions = tuple(printable(s) for s in suggestions)

    @classmethod
    def for_operation(cls, op: Operation, database: str, operator: str,
                      declared_owners: frozenset[str] | None = None, note: Text | None = None,
                      audit_gap: str | None = None) -> ConfirmScreen:
        # An action the backend will not audit says so before it is done (upstream Awa
        # without `awa-tui db init-audit`).
        audit = [("Audit", f"NOT AUDITED: {audit_gap}")] if audit_gap else []
        return cls(
            f"{op.title}?", op.verb,
            [("Target", op.target), ("Database", database), ("Operator", operator), ("Consequence", op.consequence),
             *audit],
            type_to_confirm=op.type_to_confirm, ask=op.ask, suggestions=op.suggestions,
            declared_owners=declared_owners if op.asks_owner else None, note=note, listed=op.listed,
            choices=op.choices,
        )

    def show_note(self, note: Text) -> None:
        """A newer reading of the fact (a resume's preview moves with the clock)."""
        self.note = note
        notes = self.query("#dialog-note")
        if notes:
            notes.first(Static).update(note)

    @property
    def needs_input(self) -> bool:
        return bool(self.type_to_confirm or self.ask)

    @property
    def typed(self) -> bool:
        """Confirmed with enter from a text box: a value to type, or a required choice (a silence's end)."""
        return self.needs_input or any(c.required for c in self.choices)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.heading, style="bold"), id="dialog-title")
            yield Static(facts(self.details), id="dialog-facts")
            if self.listed:
                yield Static(Text(f"All {len(self.listed):,} (scroll: tab to the list, then arrows):", style="dim"))
                with VerticalScroll(id="dialog-list"):
                    yield Static(Text(", ".join(self.listed)))
            if self.note is not None:
                yield Static(self.note, id="dialog-note")
            if self.type_to_confirm:
                yield Static(Text(f"Type {self.type_to_confirm} to confirm:"), classes="prompt")
                yield Input(id="answer", placeholder=self.type_to_confirm)
            elif self.ask:
                yield Static(Text(f"{self.ask.capitalize()}:"), classes="prompt")
                suggester = SuggestFromList(self.suggestions, case_sensitive=True) if self.suggestions else None
                yield Input(id="answer", suggester=suggester,
                            placeholder=", ".join(self.suggestions) or "owner name")
            if self.choices:
                asked = ("Required (tab between them):" if all(c.required for c in self.choices)
                         else "Optional (tab to them):")
                yield Static(Text(asked, style="dim"), classes="prompt")
                for choice in self.choices:
                    with Horizontal(classes="form-row"):
                        yield Static(Text(f"{choice.label}:"), classes="form-label")
                        yield Input(id=f"choice-{choice.key}", placeholder=choice.placeholder)
                    yield Static(id=f"choice-{choice.key}-note", classes="field-error")
            yield Static(id="dialog-owner-note")
            yield Static(id="dialog-error")
            with Horizontal(id="dialog-buttons"):
                keys = "enter" if self.typed else "y"
                yield Button(Text(f"{self.verb} [{keys}]"), id="yes", variant="error")
                yield Button(Text("Cancel [esc]" if self.typed else "Cancel [n]"), id="no")

    def on_mount(self) -> None:
        for choice in self.choices:
            self._note(choice.key, Text(""))
        if self.needs_input:
            self.query_one("#answer", Input).focus()
        elif any(c.required for c in self.choices):  # nothing to confirm until it is typed
            self.query_one(f"#choice-{next(c for c in self.choices if c.required).key}", Input).focus()
        else:
            self.query_one("#no", Button).focus()  # the safe default under a stray enter

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With a text box, y and n are letters being typed, not answers.
        if action in ("confirm", "cancel") and (self.needs_input or isinstance(self.focused, Input)):
            return action == "cancel" or None
        return True

    def read_choices(self) -> bool:
        """Read the optional values into `chosen`; False (each problem said under its field) when one is refused."""
        ok = True
        for choice in self.choices:
            text = self.query_one(f"#choice-{choice.key}", Input).value.strip()
            if choice.required and not text:
                self._note(choice.key, Text(f"{choice.label.lower()}: required", style="bold red"))
                ok = False
                continue
            try:
                self.chosen[choice.key] = choice.read(text) if text else None
            except ValidationError as exc:
                self._note(choice.key, Text(printable(str(exc)), style="bold red"))
                ok = False
        return ok

    def _note(self, key: str, text: Text) -> None:
        note = self.query_one(f"#choice-{key}-note", Static)
        note.display = bool(text.plain)  # no empty line under a field with nothing to say
        note.update(text)

    @on(Input.Changed, ".form-row Input")
    def _choice_typed(self, event: Input.Changed) -> None:
        choice = next(c for c in self.choices if f"choice-{c.key}" == event.input.id)
        text = event.value.strip()
        try:
            value = choice.read(text) if text else None
        except ValidationError as exc:
            self._note(choice.key, Text(printable(str(exc)), style="bold red"))
            return
        words = choice.meaning(value) if choice.meaning is not None and value is not None else ""
        self._note(choice.key, Text(printable(words), style="dim"))

    def action_confirm(self) -> None:
        if self.choices and not self.read_choices():
            return
        if not self.needs_input:
            self.dismiss("")
            return
        value = self.query_one("#answer", Input).value.strip()
        if self.type_to_confirm and value != self.type_to_confirm:
            self.query_one("#dialog-error", Static).update(
                Text(f"does not match: type {self.type_to_confirm} exactly", style="bold")
            )
            return
        if self.ask and not value:
            self.query_one("#dialog-error", Static).update(Text(f"{self.ask} is required", style="bold"))
            return
        self.dismiss(value)

    @on(Input.Changed, "#answer")
    def _typed(self, event: Input.Changed) -> None:
        if self.declared_owners is None:
            return
        owner = event.value.strip()
        warning = Text()
        if owner and owner not in self.declared_owners:
            warning.append("No running runtime declares owner ", style="bold")
            warning.append(printable(owner), style="bold")
            warning.append(": it is recorded, but nothing reconciles this schedule until a runtime of that "
                           "owner runs (declared: " + (", ".join(sorted(map(printable, self.declared_owners)))
                                                       or "none") + ").")
        self.query_one("#dialog-owner-note", Static).update(warning)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_confirm()
