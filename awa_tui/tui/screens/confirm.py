"""Confirmation of every mutation (Posting's ConfirmationModal: y / n / esc, keys written
on the buttons). It names the target, the database, the operator label and the
consequence; a retire asks to type the name; adopt/transfer asks for the owner."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Static

from awa_tui.printable import printable
from awa_tui.tui.operations import Operation
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
                 note: Text | None = None) -> None:
        super().__init__()
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
            declared_owners=declared_owners if op.asks_owner else None, note=note,
        )

    @property
    def needs_input(self) -> bool:
        return bool(self.type_to_confirm or self.ask)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.heading, style="bold"), id="dialog-title")
            yield Static(facts(self.details), id="dialog-facts")
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
            yield Static(id="dialog-owner-note")
            yield Static(id="dialog-error")
            with Horizontal(id="dialog-buttons"):
                keys = "enter" if self.needs_input else "y"
                yield Button(Text(f"{self.verb} [{keys}]"), id="yes", variant="error")
                yield Button(Text("Cancel [esc]" if self.needs_input else "Cancel [n]"), id="no")

    def on_mount(self) -> None:
        if self.needs_input:
            self.query_one("#answer", Input).focus()
        else:
            self.query_one("#no", Button).focus()  # the safe default under a stray enter

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With a text box, y and n are letters being typed, not answers.
        if action in ("confirm", "cancel") and self.needs_input:
            return action == "cancel" or None
        return True

    def action_confirm(self) -> None:
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

    @on(Input.Submitted, "#answer")
    def _submitted(self) -> None:
        self.action_confirm()
