"""One schedule in full: definition, args, metadata, the next 5 fires with DST marks and
the instants its exclusions skip (n and p page through later fires), recent fires with
their job states, its audit entries, and the fire ledger: the verdict of each of its last
50 due instants, and why one of them (the latest; [ and ] choose) did or did not fire.
Actions work here too."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from awa_tui.engine.cron.describe import describe
from awa_tui.engine.health.models import UNHEALTHY
from awa_tui.engine.ledger.models import (
    COALESCED,
    IMPORTED,
    MANUAL,
    NO_LEADER,
    SKIPPED_PAUSED,
    SKIPPED_RETIRED,
    UNKNOWN,
    LedgerView,
    Verdict,
)
from awa_tui.engine.read.models import AnySchedule, Fire, NextFire, ScheduleDetail, ScheduleInfo
from awa_tui.filters import Term
from awa_tui.instants import span_precise
from awa_tui.printable import printable, printable_row
from awa_tui.tui import actions
from awa_tui.tui.formatting import (
    compact_json,
    lateness,
    pretty_json,
    relative,
    seconds_text,
    short_utc,
    state_text,
    utc,
)
from awa_tui.tui.messages import (
    CopyRequested,
    DetailDataRequested,
    JobsFilterRequested,
    LedgerDataRequested,
    NextFiresRequested,
    ScheduleActions,
    usable_reply,
)
from awa_tui.tui.screens.confirm import facts
from awa_tui.tui.screens.live import LiveScreen

if TYPE_CHECKING:
    pass

DST_WORDS = {
    "gap": "DST gap: wall time skipped, fires at the gap's end",
    "fold": "DST fold: wall time repeats, fires at the first",
}
RUN_TIME = "api"  # a schedule's origin when made at run time (S64), not declared in code
# The same, shorter: where the table shares a dialog's width (the schedule form's preview).
SHORT_DST_WORDS = {"gap": "DST gap: fires at its end", "fold": "DST fold: fires the first"}
WIDE = 110  # from this width, definition and args/metadata sit side by side


def _table(*headers: str) -> Table:
    """Columns keep their full width (times must never be cut); the last one wraps."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for index, header in enumerate(headers):
        last = index == len(headers) - 1
        table.add_column(header, no_wrap=not last, overflow="fold" if last else "ignore")
    return table


def state_line(row: ScheduleInfo, now: datetime) -> Text:
    text = Text.assemble((row.name, "bold"), "  ")
    text.append_text(state_text(row, now, "bold reverse"))
    if row.fault:  # S15: skipped by the evaluator until repaired
        text.append("  ")
        text.append("BROKEN", style="bold reverse")
        text.append(f" {row.fault}")
    if row.queue_paused:
        text.append("  ")
        text.append("QUEUE PAUSED", style="bold reverse")
        text.append(f" ({row.queue}, by {row.queue_paused_by}): fires continue, dispatch waits")
    return text


def definition(row: ScheduleInfo, now: datetime) -> Table:
    at = row.last_enqueued_at
    last = f"{utc(at)} ({relative(at, now)})" if at else "never"
    spread = [("written", f"{row.cron_written} (H, resolved for this name)")] if row.cron_written else []
    jitter = [("jitter", f"{timedelta(milliseconds=row.jitter_ms)}")] if row.jitter_ms else []
    code = row.overridden or {}
    overridden = [("OVERRIDDEN", ", ".join(f"{k} code: {v}" for k, v in sorted(code.items()) if k != "cron_written")
                   + "  (reset: E)")] if code else []
    return facts([
        ("cron", f"{row.cron_expr}  ({describe(row.cron_expr)})"),
        *spread, *jitter, *overridden,
        ("zone", row.timezone),
        ("kind", row.kind),
        ("queue", row.queue),
        # S66: the catch-up window beside the policy it bounds.
        ("policy", row.missed_fire_policy + (f"   catch-up window {span_precise(row.catchup_window)}"
                                             if row.catchup_window is not None else "")),
        *excludes(row),
        ("priority", f"{row.priority}   max attempts {row.max_attempts}"),
        ("tags", ", ".join(row.tags or []) or "-"),
        ("owner", row.owner or "- (unowned)"),
        ("made", origin_words(row)),
        ("expects", expectations(row)),
        ("last fire", last),
        ("created", utc(row.created_at)),
        ("updated", utc(row.updated_at)),
    ])


def origin_words(row: AnySchedule) -> str:
    """S64: where the definition comes from, and so how an operator changes it."""
    if row.origin == RUN_TIME:
        return "at run time (e edits it, D deletes it; code sync never touches it)"
    return "in code (e overrides it; a deploy changes it)"


def excludes(row: ScheduleInfo) -> list[tuple[str, str]]:
    """S56: the dates and calendars the schedule never fires on, when it has any."""
    if row.exclude_dates is None and row.exclude_calendars is None:
        return []
    from awa_tui.engine.schedules.exclusions import describe as describe_exclusions

    return [("excludes", describe_exclusions(row.exclude_dates, row.exclude_calendars))]


def _seconds(value: int | None, default: str = "-") -> str:
    return f"{value} s" if value is not None else default


def expectations(row: ScheduleInfo) -> str:
    """S41: what the schedule promises, as declared, on one line."""
    parts = [f"late after {_seconds(row.max_lateness, '60 s (default)')}"]
    if row.expect_success_within is not None:
        parts.append(f"success within {row.expect_success_within} s")
    parts.append(f"failing over {row.max_consecutive_failures} failed" if row.max_consecutive_failures
                 else "failing when the last job failed")
    if row.pause_after_failures is not None:
        parts.append(f"pauses after {row.pause_after_failures} failed")
    return " · ".join(parts)


def health_line(data: ScheduleDetail) -> Text:
    """S42: the health the leader last recorded, since when and why."""
    health = data.health
    if health is None:
        return Text("health: not judged yet (the leader judges every schedule every 10 s)", style="dim")
    text = Text("health ")
    word = printable(health.health)  # a hand-written row may hold anything
    text.append(word.upper() if health.health in UNHEALTHY else word, style="bold")
    if health.since is not None:
        text.append(f" since {utc(health.since)} ({relative(health.since, data.now)})")
    if health.reason:
        text.append(f": {printable(health.reason)}")
    return text


def next_fires(data: ScheduleDetail, fires: list[NextFire] | None = None) -> Table | Text:
    """The next fires (`fires`: a later page of them, n; else the detail's own, from now)."""
    paged = fires is not None
    fires = data.next if fires is None else fires
    if paged and not fires:
        return Text("none: the schedule ends before these")
    if not fires:
        if data.schedule.fault:
            return Text("none: a BROKEN schedule never fires until repaired")
        return Text("none: a retired schedule never fires")
    return fires_table(fires, data.schedule.timezone, data.now)


def fires_table(fires: list[NextFire], zone: str, now: datetime, dst_words: dict[str, str] = DST_WORDS) -> Table:
    """Fires in UTC and local time, how soon, and their DST marks and exclusions (the
    detail's next fires, and the schedule form's preview of a definition not yet written)."""
    # S56: an excluded instant is listed, dimmed and struck through, its rule in the last
    # column (which then says so: NOTE, the DST words and the exclusions together).
    excluding = any(fire.excluded for fire in fires)
    table = _table("UTC", f"LOCAL ({printable(zone)})", "IN", "NOTE" if excluding else "DST")
    for fire in fires:
        note = Text(dst_words.get(fire.dst or "", "-"))
        cells = [Text(utc(fire.utc)), Text(fire.local.strftime("%Y-%m-%d %H:%M:%S %Z")),
                 Text(relative(fire.utc, now))]
        if fire.excluded:
            for cell in cells:
                cell.stylize("strike dim")
            note = Text(f"excluded: {printable(fire.excluded)}", style="yellow")
            if fire.dst:
                note.append(f"; {dst_words.get(fire.dst, '-')}", style="dim")
        table.add_row(*cells, note)
    return table


def recent(data: ScheduleDetail) -> Table | Text:
    if not data.recent:
        return Text("no jobs yet")
    table = _table("JOB", "FIRE (UTC)", "STATE", "TRY", "LATE", "HOW")
    for job in data.recent:
        table.add_row(
            Text(str(job.id)), Text(printable(fire_time(job))), Text(printable(job.state)),
            Text(str(job.attempt)), Text(lateness(job.lateness)),
            Text("manual trigger" if job.manual else "scheduled"),
        )
    return table


def audit(data: ScheduleDetail) -> Table | Text:
    if not data.audit:
        return Text("no operator action recorded")
    table = _table("AT (UTC)", "OPERATOR", "ACTION", "CHANGE")
    for entry in data.audit:
        table.add_row(
            Text(utc(entry.at)), Text(printable(entry.operator)), Text(printable(entry.action)),
            Text(compact_json(entry.after, 60)),
        )
    return table


LEDGER_SIZE = 50
FIRES_PAGE = 5  # fires a page of n lists (as many as the detail's own), excluded instants besides


def _note(v: Verdict) -> str:
    """What else the verdict says, in words (who, since when, into which fire, the error)."""
    # Instants as short_utc (the table's header says UTC): a note fits a 120-column line.
    if v.verdict in (SKIPPED_PAUSED, SKIPPED_RETIRED):
        return f"by {v.by or '?'} at {short_utc(v.since)}"
    if v.verdict == NO_LEADER:
        # The fire it was folded into is in the Why paragraph ([ and ] choose the instant).
        return f"no leader {short_utc(v.gap_from) if v.gap_from else '?'} .. " \
               f"{short_utc(v.gap_until) if v.gap_until else 'now'}"
    if v.verdict == COALESCED:
        return f"into the fire at {short_utc(v.into)} ({v.folded} folded)"
    if v.verdict == UNKNOWN:
        return v.reason or "?"
    if v.verdict == MANUAL:
        return f"triggered by {v.by or '?'}"
    if v.verdict == IMPORTED:
        return f"ran in {v.reason or '?'} before the import" + (f"; {v.error}" if v.error else "")
    parts = []
    if v.folded:
        parts.append(f"{v.folded} earlier folded in")
    if v.queue_paused_by:
        parts.append(f"queue {v.queue or '?'} PAUSED by {v.queue_paused_by}")
    if v.error:
        parts.append(v.error)
    return "; ".join(parts) or "-"


def ledger_table(view: LedgerView) -> Table | Text:
    """The verdicts, newest first; `>` marks the instant the Why paragraph explains."""
    if not view.verdicts:
        return Text("no due instant yet")
    chosen = view.why.verdict.instant if view.why.verdict is not None else None
    table = _table("  DUE (UTC)", "VERDICT", "JOB", "RESULT", "LATE", "NOTE")
    for v in reversed(view.verdicts):
        marked = v.instant == chosen and v.verdict != MANUAL
        style = "bold reverse" if marked else ""
        table.add_row(
            Text(f"{'>' if marked else ' '} {utc(v.instant)}", style=style), Text(v.verdict, style=style),
            Text(str(v.job_id) if v.job_id is not None else "-"), Text(printable(v.result or "-")),
            Text(seconds_text(v.lateness_s)), Text(printable(_note(v))),
        )
    return table


def due_instants(view: LedgerView) -> list[datetime]:
    """The instants [ and ] step through (manual triggers are not due instants), oldest first."""
    return [v.instant for v in view.verdicts if v.verdict != MANUAL]


def section(title: str) -> Text:
    return Text.assemble("\n", (title, "bold underline"))


def fire_time(job: Fire) -> str:
    """The fire instant stamped into the job (S12), shown like every other time."""
    stamp = job.fire_time
    if not stamp:
        return "- (manual)"
    try:
        return utc(datetime.fromisoformat(stamp.replace("Z", "+00:00")))
    except ValueError:
        return stamp


class DetailScreen(ScheduleActions, LiveScreen):
    BINDINGS = actions.bindings("detail")
    CONTEXT = "detail"
    FOCUS = "#detail"  # arrows and page keys scroll it

    def __init__(self, name: str, interval: float = 2.0) -> None:
        super().__init__(interval)
        self.schedule_name = name
        self.data: ScheduleDetail | None = None
        self.ledger: LedgerView | None = None
        self.chosen: datetime | None = None  # the instant the Why explains (None: the latest)
        # n / p: the next fires after `fires_after` (None: from now, the detail's own), the
        # instants earlier pages started after (p goes back), and the page read for it.
        self.fires_after: datetime | None = None
        self.fires_back: list[datetime | None] = []
        self.fires: list[NextFire] | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="detail"):
            yield Static(Text(f"{printable(self.schedule_name)}: loading…"), id="detail-body")
            yield Static(Text(""), id="detail-ledger")
        yield Footer(compact=True)

    def action_copy(self) -> None:
        self.post_message(CopyRequested("schedule", printable(self.schedule_name)))

    def action_copy_job(self) -> None:
        jobs = self.data.recent if self.data is not None else []
        if jobs:
            self.post_message(CopyRequested("job id", str(jobs[0].id)))

    def action_reload(self) -> None:
        self.loading = True
        self.post_message(DetailDataRequested(self.schedule_name, self.show))
        if self.fires_after is not None:  # the page shown follows a changed definition too
            self._read_fires()
        self.post_message(LedgerDataRequested(self.schedule_name, self.chosen, self.show_ledger))

    def show_ledger(self, data: LedgerView | None, error: str | None) -> None:
        if not usable_reply(self, "#detail-ledger", error, "ledger"):
            return
        assert data is not None
        self.ledger = data
        why = Text(data.why.text)  # the engine's paragraph: database strings already escaped
        self.query_one("#detail-ledger", Static).update(Group(
            section(f"Ledger: the last {LEDGER_SIZE} due instants, newest first ([ older, ] newer: why)"),
            ledger_table(data),
            section("Why"), why,
        ))

    def _choose(self, step: int) -> None:
        if self.ledger is None:
            return
        instants = due_instants(self.ledger)
        if not instants:
            return
        # From the instant last chosen (not the last one loaded): keys pressed faster than the
        # reads answer each move one step.
        current = self.chosen if self.chosen is not None else instants[-1]
        index = instants.index(current) if current in instants else len(instants) - 1
        index = max(0, min(len(instants) - 1, index + step))
        self.chosen = None if index == len(instants) - 1 else instants[index]
        self.post_message(LedgerDataRequested(self.schedule_name, self.chosen, self.show_ledger))

    def action_older_instant(self) -> None:
        self._choose(-1)

    def action_newer_instant(self) -> None:
        self._choose(+1)

    def _read_fires(self) -> None:
        after = self.fires_after
        assert after is not None

        def shown(fires: list[NextFire] | None, error: str | None) -> None:
            if after != self.fires_after or not usable_reply(self, "#detail-body", error, self.schedule_name):
                return  # a page left (n or p again) before its read answered
            self.fires = fires
            if self.data is not None:
                self._paint(self.data)

        self.post_message(NextFiresRequested(self.schedule_name, after, FIRES_PAGE, shown))

    def action_later_fires(self) -> None:
        """n: the next page of fires, after the last instant listed (excluded ones included)."""
        listed = self.fires if self.fires_after is not None else (self.data.next if self.data else None)
        if not listed:
            return
        self.fires_back.append(self.fires_after)
        self.fires_after, self.fires = listed[-1].utc, None
        self._read_fires()

    def action_earlier_fires(self) -> None:
        """p: the page before; from the first page, nothing."""
        if not self.fires_back:
            return
        self.fires_after, self.fires = self.fires_back.pop(), None
        if self.fires_after is None:
            if self.data is not None:
                self._paint(self.data)
        else:
            self._read_fires()

    def action_show_jobs(self) -> None:
        self.post_message(JobsFilterRequested(str(Term("field", "schedule", self.schedule_name))))

    def show(self, data: ScheduleDetail | None, error: str | None) -> None:
        self.loading = False
        if not usable_reply(self, "#detail-body", error, self.schedule_name):
            return
        assert data is not None
        self.data = data
        self._paint(data)

    def _paint(self, data: ScheduleDetail) -> None:
        body = self.query_one("#detail-body", Static)
        row, now = data.schedule, data.now
        shown = printable_row(row)  # every database string escaped; self.data keeps the real row
        paused = " (if resumed)" if row.state == "paused" else ""
        definition_part = Group(section("Definition"), definition(shown, now))
        payload_part = Group(
            section("Args"), Text(pretty_json(row.args or {})),
            section("Metadata"), Text(pretty_json(row.metadata or {})),
        )
        if self.size.width >= WIDE:
            top: Any = Table.grid(padding=(0, 4))
            top.add_row(definition_part, payload_part)
        else:
            top = Group(definition_part, payload_part)
        loaded = Text(f"loaded {utc(now, date=False)} · refreshes every {self.interval:g}s",
                      style="dim")
        body.update(Group(
            state_line(shown, now),
            health_line(data),
            loaded,
            top,
            *self._fires_part(data, paused),
            section("Recent fires"), recent(data),
            section("Audit"), audit(data),
        ))

    def _fires_part(self, data: ScheduleDetail, paused: str) -> tuple[Text, Table | Text]:
        if self.fires_after is None:
            count = sum(1 for f in data.next if not f.excluded)
            return section(f"Next {count} fires{paused} (n: later)"), next_fires(data)
        if self.fires is None:
            return section(f"Fires after {utc(self.fires_after)}{paused}"), Text("loading…")
        count = sum(1 for f in self.fires if not f.excluded)
        page = len(self.fires_back) + 1
        return (section(f"Fires after {utc(self.fires_after)}{paused}: {count} (page {page}; n: later, p: earlier)"),
                next_fires(data, self.fires))

    def action_close(self) -> None:
        self.dismiss()

    def acted_schedule(self) -> ScheduleInfo | None:
        return None if self.data is None else self.data.schedule

    def after_operation(self) -> None:
        self.action_reload()
