"""The console's key map: every key (and mouse gesture) of every screen, as ONE table of
data. Bindings, the footer, the help screen, the command palette and the table in
docs/keys.md are all derived from it (tests/tui/test_keymap.py checks the doc), so a new
key is one new row here.

`scope` is where a key works: "app" (everywhere on the panels), a panel id, "table" (any
list: every panel and the audit log), "detail", "job" (the job detail), "audit", "plan-detail", "dialog",
"palette", "mouse". Rows with `bound=False` document keys another widget owns (Textual's
arrows, palette and mouse); they are listed, never bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from awa_tui.engine.backend.protocol import OWN_SCHEMA_FEATURES

PANELS = ("schedules", "owners", "runtimes", "plan", "queues", "jobs")
# Panels without a number key (k9s habit): reached by `:` and the palette only, shown in the
# panel bar while they are open. A rarely visited list, so the numbered bar stays as it is.
JUMP_PANELS = ("calendars",)
ALL_PANELS = (*PANELS, *JUMP_PANELS)
PANEL_NEEDS = {"owners": "owners", "plan": "plan", "jobs": "ledger",  # panels a backend feature provides
               "calendars": "calendars"}


@dataclass(frozen=True)
class Act:
    scope: str
    key: str
    action: str  # the widget's action_<name>
    label: str  # footer text
    help: str  # help screen and docs/keys.md text
    mutation: bool = False
    footer: bool = True
    palette: str | None = None  # "noun: verb" (Posting's naming)
    bound: bool = True  # False: documented only (the key belongs to Textual or the mouse)
    # The backend feature the key needs (engine/read/backend.FEATURES): a backend without it
    # (upstream Awa) has the key left out of footer, help and palette.
    needs: str | None = None
    # Checked when the app reads the key, before it hands the key to the focused widget:
    # `/` must take the keyboard before the next key arrives (a paste, a burst over SSH).
    priority: bool = False

    @property
    def id(self) -> str:
        """Binding id, so keys can be remapped with App.set_keymap."""
        return f"{self.scope}.{self.action}"

    @property
    def key_label(self) -> str:
        return key_label(self.key)


def key_label(keys: str) -> str:
    """Keys as help and the docs show them: `?`, not question_mark."""
    return ", ".join(KEY_LABELS.get(k, k) for k in keys.split(",") if k not in KEY_UNLABELLED)


# What a terminal sends for another key shown: ctrl+space arrives as ctrl+@ (NUL) over SSH
# and tmux, as ctrl+space under the kitty keyboard protocol; both are bound, one is shown.
KEY_UNLABELLED = frozenset({"ctrl+@"})
KEY_LABELS = {"question_mark": "?", "colon": ":", "slash": "/", "enter": "enter", "escape": "esc",
              "plus": "+", "minus": "-", "asterisk": "*", "space": "space",
              "left_square_bracket": "[", "right_square_bracket": "]", "exclamation_mark": "!"}

ACTS: tuple[Act, ...] = (
    # Everywhere.
    Act("app", "question_mark", "help", "help", "this help", palette="console: help"),
    Act("app", "colon", "jump", "jump", "jump to a panel by name, a prefix or a short name (:sc, :cron, :rt, :q, "
        ":log; the prompt lists them all)", palette="console: jump to panel"),
    *(
        Act("app", str(i), f"show_panel('{name}')", name, f"{name} panel", footer=False,
            palette=f"panel: {name}", needs=PANEL_NEEDS.get(name))
        for i, name in enumerate(PANELS, start=1)
    ),
    *(
        Act("app", f":{name}", f"show_panel('{name}')", name, f"{name} panel (no number key: type :{name}, or use "
            "the palette)", footer=False, palette=f"panel: {name}", needs=PANEL_NEEDS.get(name), bound=False)
        for name in JUMP_PANELS
    ),
    Act("app", "l", "audit", "audit", "audit log: every operator action", palette="audit: show log"),
    Act("app", "exclamation_mark", "alerts", "alerts", "alerts: the open ones, each sink's delivery, and the "
        "silences in force", footer=False, palette="alerts: show",
        needs="alerts"),
    Act("app", "r", "refresh_now", "refresh", "refresh now", footer=False, palette="console: refresh now"),
    Act("app", "plus", "faster", "faster", "refresh more often", footer=False),
    Act("app", "minus", "slower", "slower", "refresh less often", footer=False),
    Act("app", "q", "quit", "quit", "quit (asks first while this process leads)", palette="console: quit"),
    # Every list (the panels and the audit log).
    Act("table", "j,down", "cursor_down", "down", "next row", footer=False),
    Act("table", "k,up", "cursor_up", "up", "previous row", footer=False),
    Act("table", "g,home", "first_row", "first", "first row", footer=False),
    Act("table", "G,end", "last_row", "last",
        "last row of the whole list (on schedules, jobs and the audit log, reads the last page; g the first again)",
        footer=False),
    Act("table", "pageup", "page_up", "page up", "one screen up", footer=False),
    Act("table", "pagedown", "page_down", "page down", "one screen down", footer=False),
    Act("table", "left,right", "", "", "scroll the columns sideways one column at a time: the ones that do not fit "
        "the terminal are past the right edge (the first column, the name, stays)", footer=False, bound=False),
    # Not in the footer: at 80 columns it would cut `q quit` (help and docs/keys.md list it).
    Act("table", "w", "toggle_wide", "wide", "wide columns: each as wide as its whole content (names, errors, "
        "details uncut; right scrolls to the rest); again: fitted to the terminal", footer=False,
        palette="columns: wide / fitted"),
    # Every panel.
    Act("panel", "slash", "filter", "filter", "filter with the grammar of docs/keys.md (owners, runtimes, queues; "
        "esc clears)", footer=False, priority=True),
    Act("panel", "o", "sort_menu", "sort", "sort menu: any column (or click its header; again: reversed)",
        footer=False),
    Act("panel", "O", "reverse_sort", "reverse", "reverse the sort order", footer=False),
    Act("panel", "c", "copy", "copy", "copy the selected row's name (a schedule, owner, queue, instance id, job id)",
        footer=False),
    Act("panel", "y", "raw", "raw", "the selected row raw: every field as name: value lines (esc closes, c copies)",
        footer=False),
    # Schedules panel.
    Act("schedules", "enter", "details", "detail", "details of the selected schedule", footer=False,
        palette="schedule: details"),
    Act("schedules", "slash", "filter", "filter",
        "filter: owner:X state:paused late, free text (grammar: docs/keys.md; esc clears)",
        palette="schedule: filter", priority=True),
    Act("schedules", "o", "sort_menu", "sort", "sort menu: name, next, last, state, queue, owner or health (or click a "
        "header; the header marks the sort)", footer=False, palette="schedule: sort by"),
    Act("schedules", "O", "reverse_sort", "reverse", "reverse the sort order", footer=False),
    Act("schedules", "space", "toggle_select", "select", "select or unselect the row: s, t, a, ctrl+d and u then "
        "act on every selected schedule, with one confirmation", footer=False),
    Act("schedules", "ctrl+space,ctrl+@,V", "select_range", "select range",
        "select every row from the last selected one to the cursor, added to the selection (none selected yet: "
        "the cursor's row)", footer=False, palette="schedule: select range"),
    Act("schedules", "asterisk,ctrl+a", "select_all", "select all",
        "select every listed (filtered) schedule, added to the selection (esc clears)",
        footer=False, palette="schedule: select all listed"),
    Act("schedules", "escape", "", "", "clear the selection; again, clear the filter", bound=False),
    Act("schedules", "v", "show_jobs", "jobs", "the schedule's jobs (the jobs panel, filter schedule:NAME)",
        needs="ledger",
        footer=False, palette="schedule: show its jobs"),
    Act("schedules", "s", "toggle_pause", "pause/resume", "pause (optionally until a time, with a reason: tab in "
        "the dialog) or resume the selected schedule",
        mutation=True, palette="schedule: pause / resume", needs="schedule_pause"),
    Act("schedules", "t", "trigger", "trigger", "trigger one job of the selected schedule now",
        mutation=True, palette="schedule: trigger now", needs="trigger"),
    Act("schedules", "a", "adopt", "adopt", "adopt an unowned schedule, or transfer it to another owner",
        mutation=True, footer=False, palette="schedule: adopt / transfer", needs="owners"),
    Act("schedules", "ctrl+d", "retire", "retire", "retire the selected schedule (type its name to confirm)",
        mutation=True, footer=False, palette="schedule: retire", needs="lifecycle"),
    Act("schedules", "u", "restore", "restore", "restore a retired schedule (no replay of missed fires)",
        mutation=True, footer=False, palette="schedule: restore", needs="lifecycle"),
    Act("schedules", "b", "backfill", "backfill", "backfill the last 24 hours: one job per instant that never fired "
        "(the dialog shows the count first)", mutation=True, footer=False, palette="schedule: backfill",
        needs="backfill"),
    Act("schedules", "e", "override", "edit/override", "edit: one made at run time in the schedule form; one declared "
        "in code by an override (a form; sync keeps it)", mutation=True,
        footer=False, palette="schedule: edit / override", needs="override"),
    Act("schedules", "n", "new_schedule", "new", "new schedule made at run time (a form: checked as you type, next "
        "fires shown)", mutation=True, footer=False,
        palette="schedule: new (made at run time)", needs="runtime_schedules"),
    Act("schedules", "D", "delete_schedule", "delete", "delete a schedule made at run time (type its name; its jobs "
        "and history stay)", mutation=True, footer=False,
        palette="schedule: delete (made at run time)", needs="runtime_schedules"),
    Act("schedules", "E", "reset_override", "reset", "reset an OVERRIDDEN schedule to its code definition",
        mutation=True, footer=False, palette="schedule: reset override", needs="override"),
    # Owners panel.
    Act("owners", "enter", "details", "schedules", "the owner's schedules (the schedules panel, filter owner:NAME)",
        footer=False, palette="owner: show its schedules", needs="owners"),
    Act("owners", "a", "adopt_declared", "adopt declared",
        "adopt every unowned schedule the owner's running manifest declares", mutation=True,
        palette="owner: adopt declared schedules", needs="owners"),
    Act("owners", "ctrl+d", "retire_owner", "retire owner", "retire every schedule of the selected owner",
        mutation=True, palette="owner: retire all schedules", needs="owners"),
    Act("owners", "u", "restore_owner", "restore owner", "restore every retired schedule of the owner",
        mutation=True, palette="owner: restore all schedules", needs="owners"),
    # Runtimes panel.
    Act("runtimes", "enter", "details", "detail", "the runtime in full: version, host, pid, manifest, lease, "
        "health, last passes", footer=False, palette="runtime: details"),
    Act("runtimes", "e", "events", "events", "its recent events, newest first: became leader, lost the lead, a pass "
        "timed out on a lock (and who held it), refused to lead, started, stopped",
        palette="runtime: recent events", needs="health"),
    # Plan panel.
    Act("plan", "enter", "details", "detail", "the entry's full reason and the schedules it would touch",
        palette="plan: entry details", needs="plan"),
    # Queues panel.
    Act("queues", "enter", "details", "schedules", "the queue's schedules (the schedules panel, filter queue:NAME)",
        footer=False, palette="queue: show its schedules"),
    Act("queues", "s", "toggle_pause", "pause/resume", "pause or resume the selected queue (dispatch only)",
        mutation=True, palette="queue: pause / resume", needs="queue_pause"),
    # Calendars panel (`:calendars`; awa-tui's own schema only).
    Act("calendars", "enter", "details", "dates", "the calendar's dates (upcoming first) and the schedules that "
        "exclude them", footer=False, palette="calendar: dates and schedules", needs="calendars"),
    # Jobs panel (the fire ledger's jobs: awa-tui's own schema only).
    Act("jobs", "enter", "details", "detail", "the job in full: each attempt's error and traceback, args, metadata",
        footer=False, palette="job: details", needs="ledger"),
    Act("jobs", "slash", "filter", "filter",
        "filter: schedule:X queue:Q state:running result:failed kind:K failed manual (esc clears)",
        palette="job: filter", needs="ledger", priority=True),
    Act("jobs", "v", "show_schedule", "schedule", "the job's schedule (its detail screen)",
        palette="job: show its schedule", needs="ledger"),
    Act("jobs", "t", "retry", "retry", "retry the selected job now (a failed, discarded or cancelled one)",
        mutation=True, palette="job: retry", needs="ledger"),
    Act("jobs", "x", "cancel_job", "cancel", "cancel the selected job (a running one is stopped by its runtime)",
        mutation=True, palette="job: cancel", needs="ledger"),
    # Schedule detail screen.
    Act("detail", "escape", "close", "back", "back to the panels"),
    Act("detail", "q", "close", "back", "back to the panels", footer=False),
    Act("detail", "s", "toggle_pause", "pause/resume", "pause (optionally until a time, with a reason) or resume "
        "this schedule", mutation=True,
        needs="schedule_pause"),
    Act("detail", "t", "trigger", "trigger", "trigger one job now", mutation=True, needs="trigger"),
    Act("detail", "a", "adopt", "adopt", "adopt / transfer", mutation=True, footer=False, needs="owners"),
    Act("detail", "ctrl+d", "retire", "retire", "retire (type the name)", mutation=True, footer=False,
        needs="lifecycle"),
    Act("detail", "u", "restore", "restore", "restore", mutation=True, footer=False, needs="lifecycle"),
    Act("detail", "b", "backfill", "backfill", "backfill the last 24 hours (shows the count first)", mutation=True,
        footer=False, needs="backfill"),
    Act("detail", "e", "override", "edit/override", "edit (made at run time: the schedule form) or override "
        "(declared in code: a form)", mutation=True, footer=False, needs="override"),
    Act("detail", "D", "delete_schedule", "delete", "delete (made at run time only; type the name)", mutation=True,
        footer=False, needs="runtime_schedules"),
    Act("detail", "E", "reset_override", "reset", "reset an override to the code definition", mutation=True,
        footer=False, needs="override"),
    Act("detail", "c", "copy", "copy", "copy the schedule's name", footer=False),
    Act("detail", "J", "copy_job", "copy job", "copy the id of its latest job", footer=False, needs="ledger"),
    Act("detail", "r", "reload", "reload", "reload now (it also refreshes by itself)", footer=False),
    Act("detail", "v", "show_jobs", "jobs", "this schedule's jobs (the jobs panel, filter schedule:NAME)",
        needs="ledger"),
    Act("detail", "left_square_bracket", "older_instant", "older", "why: the previous (older) due instant of the "
        "ledger", footer=False, needs="ledger"),
    Act("detail", "right_square_bracket", "newer_instant", "newer", "why: the next (newer) due instant of the ledger",
        footer=False, needs="ledger"),
    Act("detail", "n", "later_fires", "later fires", "next fires: the page after (excluded instants listed and "
        "marked, with the rule that skips them)", footer=False),
    Act("detail", "p", "earlier_fires", "earlier fires", "next fires: the page before (back to the first)",
        footer=False),
    # Job detail screen.
    Act("job", "escape", "close", "back", "back to where it was opened from"),
    Act("job", "q", "close", "back", "back", footer=False),
    Act("job", "v", "show_schedule", "schedule", "its schedule's detail screen"),
    Act("job", "t", "retry", "retry", "retry this job now (a failed, discarded or cancelled one)", mutation=True),
    Act("job", "x", "cancel_job", "cancel", "cancel this job (a running one is stopped by its runtime)", mutation=True),
    Act("job", "c", "copy", "copy", "copy the job's id", footer=False),
    Act("job", "r", "reload", "reload", "reload now (it also refreshes by itself)", footer=False),
    # Audit log screen.
    Act("audit", "slash", "filter", "filter",
        "filter: operator:X action:pause target:NAME since:2h until:2025-03-08T12:00Z, every row searched "
        "(esc clears)", priority=True),
    Act("audit", "escape", "back", "back", "back to the panels (first clears the filter)"),
    Act("audit", "q", "close", "back", "back to the panels", footer=False),
    Act("audit", "r", "reload", "reload", "reload the audit log"),
    Act("audit", "y", "raw", "raw", "the selected entry raw: every field as name: value lines", footer=False),
    Act("audit", "enter", "details", "entry", "the entry in full: before and after whole, the database user, "
        "client address and application of the session that wrote it", footer=False),
    # Alerts screen.
    Act("alerts", "escape", "close", "back", "back to the panels"),
    Act("alerts", "q", "close", "back", "back to the panels", footer=False),
    Act("alerts", "r", "reload", "reload", "reload now (it also refreshes by itself)", footer=False),
    Act("alerts", "s", "silence_schedule", "silence", "silence the selected alert's schedule until a time, with a "
        "reason (one dialog; audited as alerts silence is)", mutation=True, needs="alerts"),
    Act("alerts", "S", "silence_owner", "silence owner", "silence every schedule of the selected alert's owner until "
        "a time, with a reason", mutation=True, needs="alerts"),
    Act("alerts", "tab", "", "", "from the alerts to the silences and back", bound=False),
    # Audit entry screen.
    Act("audit-entry", "escape", "close", "back", "back to the audit log"),
    Act("audit-entry", "q", "close", "back", "back to the audit log", footer=False),
    Act("audit-entry", "c", "copy", "copy", "copy the entry's target", footer=False),
    # A runtime's recent events (`e` on the runtimes panel).
    Act("runtime-events", "escape", "close", "back", "back to the runtimes panel"),
    Act("runtime-events", "q", "close", "back", "back to the runtimes panel", footer=False),
    Act("runtime-events", "r", "reload", "reload", "read the runtime's events again"),
    Act("runtime-events", "c", "copy", "copy", "copy the runtime's instance id", footer=False),
    # The raw view of a row (`y`).
    Act("raw", "escape,q", "close", "back", "close the raw view"),
    Act("raw", "c", "copy", "copy", "copy every line of the raw view"),
    Act("raw", "up,down", "", "", "scroll a long row (pageup and pagedown a screen)", bound=False),
    # Pages over the panels (a plan entry, a runtime).
    Act("info", "escape,q,enter", "", "", "close the page", bound=False),
    # Every confirmation dialog.
    Act("dialog", "y", "", "", "yes: do it (the button names the action)", bound=False),
    Act("dialog", "n,escape", "", "", "no: cancel, nothing is done", bound=False),
    Act("dialog", "enter", "", "", "confirm what was typed (a name to retire, an owner to adopt)", bound=False),
    Act("dialog", "right", "", "", "accept the suggested owner (at the end of the text)", bound=False),
    Act("dialog", "tab", "", "", "next field of a form: the override, the schedule form, a pause's end and reason "
        "(shift+tab: previous; enter: confirm)", bound=False),
    # The help screen.
    Act("help", "escape,question_mark,q", "", "", "close this help", bound=False),
    # Textual's command palette.
    Act("palette", "ctrl+p", "", "", "command palette: every action by name (noun: verb)", bound=False),
    Act("palette", "escape", "", "", "close the palette", bound=False),
    # The mouse (everything also has a key: the console works without one).
    Act("mouse", "click", "", "", "a row: select it; the selected row again: open it (as enter)", bound=False),
    Act("mouse", "tab", "", "", "click a panel tab (1 Schedules, 2 Owners...): show that panel", bound=False),
    Act("mouse", "header", "", "", "click a column header: sort by it (again: reverse)", bound=False),
    Act("mouse", "wheel", "", "", "scroll the list or the page (shift+wheel or the scrollbar: the columns "
        "sideways)", bound=False),
)

SCOPES = (
    ("app", "Everywhere"),
    ("table", "Every list"),
    ("panel", "Every panel"),
    ("schedules", "Schedules panel"),
    ("owners", "Owners panel"),
    ("runtimes", "Runtimes panel"),
    ("plan", "Plan panel"),
    ("queues", "Queues panel"),
    ("jobs", "Jobs panel"),
    ("calendars", "Calendars panel"),
    ("detail", "Schedule detail"),
    ("job", "Job detail"),
    ("audit", "Audit log"),
    ("audit-entry", "Audit entry"),
    ("runtime-events", "Runtime events"),
    ("alerts", "Alerts"),
    ("raw", "Raw view"),
    ("info", "Pages"),
    ("help", "Help"),
    ("dialog", "Dialogs"),
    ("palette", "Command palette"),
    ("mouse", "Mouse"),
)


def markdown() -> str:
    """The key table of docs/keys.md (tests/tui/test_keymap.py checks the doc matches it)."""
    titles = dict(SCOPES)
    # `name`: what the config file's [keys] table calls it (the binding's id), bound keys only.
    lines = ["| where | keys | does | name |", "|---|---|---|---|"]
    for act in sorted(ACTS, key=lambda a: [s for s, _ in SCOPES].index(a.scope)):
        panels = f"1-{len(PANELS)}"
        numbered = act.action.startswith("show_panel") and act.key.isdigit()
        keys = panels if numbered else act.key_label
        if numbered and act.key != "1":
            continue
        does = "panels: " + ", ".join(PANELS) if keys == panels else act.help
        flag = " (not in read-only mode)" if act.mutation else ""
        if act.needs in OWN_SCHEMA_FEATURES and not numbered:
            flag += " (not in upstream Awa mode)"
        name = f"`{act.id}`" if act.bound and not numbered else ""
        lines.append(f"| {titles[act.scope]} | `{keys}` | {does}{flag} | {name} |".replace("`|`", "`\\|`"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")

