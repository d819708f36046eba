"""Operator actions as values: what the confirm screen shows, what is re-checked at
confirm time, and the engine call that does it.

The target is captured when the key is pressed (the row the operator was looking at).
At confirm time its state is read again; if it changed in between (another operator, the
reconciler), the action is refused and says why, rather than acting on a state the
operator never saw. The engine's own guards (row locks, "already paused") cover the
instant between that re-read and the action.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from awa_tui.engine.actions.made import ScheduleRequest
from awa_tui.engine.actions.overrides import OverrideRequest
from awa_tui.engine.alerts.models import AlertDelivery
from awa_tui.engine.backend.protocol import ConsoleBackend
from awa_tui.engine.core.errors import Conflict, NotFound
from awa_tui.engine.ledger.models import WAITING_STATES, JobSummary
from awa_tui.engine.read.models import AnySchedule, OwnerChange, OwnerSummary, QueueRow
from awa_tui.instants import duration_text, parse_ahead, span_precise
from awa_tui.tui.formatting import STATE_WORDS, state_word, utc


class Refused(Conflict):
    """The target changed between the keypress and the confirmation."""


class NotPossible(Exception):
    """The action makes no sense for the selected row (said at keypress, no dialog)."""


Run = Callable[[ConsoleBackend, str], str]  # (client, typed value) -> one-line result


@dataclass(frozen=True)
class Choice:
    """An optional value the confirmation offers besides yes and no (a pause's end, its
    reason): empty is None; `read` turns the text into the value or raises a one-line
    ValidationError; `meaning` says, under the field, what a value read means."""

    key: str
    label: str
    placeholder: str
    read: Callable[[str], Any]
    meaning: Callable[[Any], str] | None = None
    required: bool = False  # the dialog is not confirmed while it is empty (a silence's end and reason)


@dataclass(frozen=True)
class Operation:
    title: str  # "Pause schedule"
    verb: str  # button text: "Pause"
    target: str  # what is acted on, as shown
    consequence: str
    captured: Any  # state fingerprint at keypress
    read_state: Callable[[ConsoleBackend], Any]  # client -> fingerprint now
    run: Run  # (client, typed value) -> one-line result
    describe: Callable[[Any], str] = str  # fingerprint -> words, for refusals
    type_to_confirm: str | None = None  # the operator must type this exact text
    ask: str | None = None  # label of a value to ask for (e.g. an owner name)
    suggestions: tuple[str, ...] = ()
    asks_owner: bool = False  # the value asked for is an owner: the dialog says if no runtime declares it
    # (client, now) -> what it would do, read before the dialog opens (now: the console's clock, None = DB time)
    preview: Callable[[Any, Any], str] | None = None
    # Every target by name, when `target` names only the first few ("... and 17 more"):
    # the dialog lists them all in a scrolling box.
    listed: tuple[str, ...] = ()
    # Optional values the dialog offers (empty: None), read before it is dismissed; with
    # them, `run_chosen` acts instead of `run`, given the values by Choice.key.
    choices: tuple[Choice, ...] = ()
    run_chosen: Callable[[ConsoleBackend, Mapping[str, Any]], str] | None = None
    choices_need: str | None = None  # the backend feature they need: without it, neither is offered

    def execute(self, client: ConsoleBackend, value: str, chosen: Mapping[str, Any] | None = None) -> str:
        """Runs on the writer thread: re-check, then act."""
        now = self.read_state(client)
        if now != self.captured:
            raise Refused(
                f"refused: {self.target} changed since you chose it "
                f"(was {self.describe(self.captured)}, now {self.describe(now)}); nothing was done"
            )
        if self.run_chosen is not None:
            return self.run_chosen(client, chosen or {})
        return self.run(client, value)


def _then(act: Callable[[ConsoleBackend], object], line: str) -> Run:
    """Run `act` on the client; `line` is what the operator reads once it is done."""

    def run(client: ConsoleBackend, _value: str) -> str:
        act(client)
        return line

    return run


# --- schedules --------------------------------------------------------------------------


def schedule_state(row: AnySchedule | None) -> tuple[Any, ...]:
    if row is None:
        return ("gone", None, None)
    return (row.state, row.paused_by or row.retired_by, row.owner)


def describe_schedule_state(state: tuple[Any, ...]) -> str:
    kind, by, owner = state
    if kind == "gone":
        return "removed"
    text = f"{state_word(kind)} by {by}" if kind in STATE_WORDS else state_word(kind)
    return f"{text}, owner {owner or 'none'}"


def _read_schedule(name: str) -> Callable[[ConsoleBackend], Any]:
    def read(client: ConsoleBackend) -> Any:
        try:
            return schedule_state(client.reads.get_schedule(name))
        except NotFound:
            return schedule_state(None)

    return read


def _schedule_op(row: AnySchedule, **fields: Any) -> Operation:
    name = row.name
    return Operation(
        target=f"schedule {name}",
        captured=schedule_state(row),
        read_state=_read_schedule(name),
        describe=describe_schedule_state,
        **fields,
    )


def toggle_pause(row: AnySchedule) -> Operation:
    name = row.name
    if row.state == "retired":
        raise NotPossible(f"{name} is RETIRED: restore it first (u)")
    if row.state == "paused":
        return _schedule_op(
            row, title="Resume schedule", verb="Resume",
            consequence=(
                f"Clears the pause (by {row.paused_by}). Its policy ({row.missed_fire_policy}) decides "
                "what fires for the paused period: coalesce fires once, catch_up each missed fire in order."
            ),
            run=_then(lambda client: client.actions.resume(name), f"resumed {name}"),
            preview=lambda client, now: client.reads.resume_preview(name, now=now).explanation,
        )
    queue_note = f" Its queue {row.queue} is PAUSED too." if row.queue_paused else ""

    def pause(client: ConsoleBackend, chosen: Mapping[str, Any]) -> str:
        # S65: an end (the leader resumes then, the policy applies) and a reason, both optional.
        state = client.actions.pause(name, until=chosen.get("until"), reason=chosen.get("reason"))
        until = f" until {utc(state.paused_until)}" if state.paused_until is not None else ""
        return f"paused {name}{until}" + (f": {state.pause_reason}" if state.pause_reason else "")

    return _schedule_op(
        row, title="Pause schedule", verb="Pause",
        consequence=(
            "No new fires until resumed. Jobs already enqueued, running or retrying are not affected."
            + queue_note
        ),
        run=_then(lambda client: client.actions.pause(name), f"paused {name}"),
        choices=PAUSE_CHOICES, run_chosen=pause, choices_need=PAUSE_CHOICES_NEED,
    )


def _pause_end(text: str) -> datetime | timedelta:
    return parse_ahead(text, "until")


def _end_words(value: datetime | timedelta, made: str) -> str:
    """What an end typed as a duration or an instant means: 'ends 2h00m after the pause is made'."""
    if isinstance(value, timedelta):
        return f"ends {span_precise(value.total_seconds())} after the {made} is made"
    return f"ends {utc(value)}"


def _pause_end_words(value: datetime | timedelta) -> str:
    return _end_words(value, "pause") + "; the leader resumes it then and its policy applies"


# S65: what the pause dialog offers besides yes and no (the CLI's --until and --reason),
# where the backend has them (upstream Awa's leader knows no pause end).
PAUSE_CHOICES_NEED = "pause_until"
PAUSE_CHOICES = (
    Choice("until", "Until", "2h, 1d or an ISO instant (empty: no end)", _pause_end,
           _pause_end_words),
    Choice("reason", "Reason", "why, shown beside the pause", str),
)


def trigger(row: AnySchedule) -> Operation:
    name = row.name
    if row.state == "retired":
        raise NotPossible(f"{name} is RETIRED and cannot be triggered: restore it first (u)")
    notes = []
    if row.state == "paused":
        notes.append("The schedule stays PAUSED.")
    if row.queue_paused:
        notes.append(f"Queue {row.queue} is PAUSED: the job waits until it is resumed.")

    def run(client: ConsoleBackend, _value: str) -> str:
        job = client.actions.trigger(name)
        return f"triggered {name}: job {job.id} in queue {job.queue}"

    return _schedule_op(
        row, title="Trigger schedule", verb="Trigger",
        consequence=" ".join(
            ["Enqueues one job now (metadata triggered_manually=true); the fire schedule is unchanged.", *notes]
        ),
        run=run,
    )


BACKFILL_SPAN = timedelta(hours=24)  # the console's range; any other range: `cron backfill`


def backfill(row: AnySchedule) -> Operation:
    """Backfill the last 24 hours: the preview counts (a dry run) before the dialog opens,
    and the confirmed run uses the same range; only instants that never fired get a job."""
    name = row.name
    if row.state == "retired":
        raise NotPossible(f"{name} is RETIRED: restore it before a backfill (u)")
    span: dict[str, datetime] = {}  # the previewed range, and the clock it was checked against

    def preview(client: ConsoleBackend, now: datetime | None) -> str:
        hi = now or client.reads.db_time()
        span["from"], span["to"], span["now"] = hi - BACKFILL_SPAN, hi, hi
        result = client.actions.backfill(name, span["from"], span["to"], dry_run=True, now=hi)
        return (f"{result.count} job{'s' if result.count != 1 else ''} would be enqueued for "
                f"{utc(span['from'])} .. {utc(span['to'])} ({result.already_fired} already fired, "
                f"{result.left_to_scheduler} left to the scheduler).")

    def run(client: ConsoleBackend, _value: str) -> str:
        if not span:
            raise NotPossible("no preview was read: nothing was done")
        result = client.actions.backfill(name, span["from"], span["to"], now=span["now"])
        return f"backfilled {name}: {result.count} job{'s' if result.count != 1 else ''}"

    return _schedule_op(
        row, title="Backfill schedule", verb="Backfill",
        consequence=("Enqueues one job (metadata backfill=true) per due instant of the last 24 hours that "
                     "never fired and that the scheduler has passed; never a second job for an instant. "
                     "Other ranges: awa-tui cron backfill NAME --from --to."),
        run=run, preview=preview,
    )


def retire(row: AnySchedule) -> Operation:
    name = row.name
    if row.state == "retired":
        raise NotPossible(f"{name} is already RETIRED (by {row.retired_by})")
    return _schedule_op(
        row, title="Retire schedule", verb="Retire",
        consequence=(
            "It stops firing and cannot be triggered; the row stays as a tombstone that no deploy "
            "revives. Undo with restore (u), which does not replay missed fires."
        ),
        type_to_confirm=name,
        run=_then(lambda client: client.actions.retire(name), f"retired {name}"),
    )


def restore(row: AnySchedule) -> Operation:
    name = row.name
    if row.state != "retired":
        raise NotPossible(f"{name} is not retired; nothing to restore")
    paused = " It stays PAUSED." if row.paused_at else ""
    return _schedule_op(
        row, title="Restore schedule", verb="Restore",
        consequence=(
            "Clears the tombstone; evaluation restarts from now: no fire from the retired period "
            f"is replayed, whatever the policy.{paused}"
        ),
        run=_then(lambda client: client.actions.restore(name), f"restored {name}"),
    )


def adopt_or_transfer(row: AnySchedule, owners: tuple[str, ...]) -> Operation:
    name = row.name
    owner = row.owner
    if row.state == "retired":
        raise NotPossible(f"{name} is RETIRED: restore it before changing its owner")

    def adopt(client: ConsoleBackend, to: str) -> str:
        client.actions.adopt(name, to)
        return f"{name} adopted by {to}"

    def transfer(client: ConsoleBackend, to: str) -> str:
        client.actions.transfer(name, to)
        return f"{name} transferred from {owner} to {to}"

    if owner is None:
        return _schedule_op(
            row, title="Adopt schedule", verb="Adopt", ask="new owner", suggestions=owners,
            consequence=(
                "The owner's manifest becomes authoritative for it: reconciliation may update its "
                "definition, or retire it if the manifest does not name it."
            ),
            run=adopt,
            asks_owner=True,
        )
    return _schedule_op(
        row, title="Transfer schedule", verb="Transfer", ask="to owner",
        suggestions=tuple(o for o in owners if o != owner),
        consequence=(
            f"Moves it from owner {owner} to another owner; the certificates of both owners are "
            "invalidated until their manifests are synchronised again."
        ),
        run=transfer,
        asks_owner=True,
    )


def override(row: AnySchedule, request: OverrideRequest) -> Operation:
    """S49: the values the override form changed, confirmed like every mutation."""
    name = row.name
    changes = ", ".join(f"{column} {value!r}" if column == "args" else f"{column} {value}"
                        for column, value in request.changes().items())
    return _schedule_op(
        row, title="Override schedule", verb="Override",
        consequence=(
            f"Sets {changes}. The code's values are kept: sync and reconciliation never overwrite "
            "an override; reset (E) returns to the code definition."
        ),
        run=lambda client, _v: (
            f"overrode {name}: {', '.join(sorted(client.actions.override(name, request).overridden or {}))}"),
    )


def reset_override(row: AnySchedule) -> Operation:
    name = row.name
    if not row.overridden:
        raise NotPossible(f"{name} is not overridden; nothing to reset")
    code = ", ".join(f"{column} {value}" for column, value in sorted(row.overridden.items())
                     if column != "cron_written")
    return _schedule_op(
        row, title="Reset schedule", verb="Reset",
        consequence=f"Ends the override: back to the code definition ({code}).",
        run=_then(lambda client: client.actions.reset_override(name), f"reset {name} to its code definition"),
    )


# --- schedules made at run time (S64) ---------------------------------------------------

RUN_TIME = "api"  # a schedule's origin when made at run time (not declared in code)


@dataclass(frozen=True)
class ScheduleForm:
    """What the schedule form was confirmed with: the name, the settings (an edit: only
    those changed), and the owner of a new one."""

    name: str
    request: ScheduleRequest
    owner: str | None = None


SETTING_WORDS = {"cron_expr": "cron", "timezone": "zone", "max_attempts": "max attempts",
                 "missed_fire_policy": "missed fires", "start_at": "start at", "end_at": "end at",
                 "max_fires": "max fires", "exclude": "excluded days", "calendar": "calendars"}


def request_words(request: ScheduleRequest) -> str:
    """'cron 0 8 * * 1, kind report, args {"a": 1}, no end at': the settings given (an
    edit's taken away: "no ..."), in the form's words."""
    def shown(key: str, value: object) -> str:
        if key == "args":
            return json.dumps(value)
        if key in ("start_at", "end_at") and isinstance(value, datetime):
            return utc(value)
        if key == "jitter" and isinstance(value, timedelta):
            return duration_text(int(value.total_seconds()))
        if key == "exclude" and isinstance(value, tuple):
            return ", ".join(f"{d[0]}..{d[1]}" if isinstance(d, tuple) else str(d) for d in value)
        if key in ("tags", "calendar") and isinstance(value, tuple):
            return ", ".join(value) or "none"
        return str(value)

    return ", ".join(f"no {SETTING_WORDS.get(key, key)}" if value is None and key in request.cleared
                     else f"{SETTING_WORDS.get(key, key)} {shown(key, value)}"
                     for key, value in request.settings().items())


def create_schedule(form: ScheduleForm) -> Operation:
    name, owner = form.name, form.owner
    return Operation(
        title="Create schedule", verb="Create", target=f"schedule {name}",
        consequence=(f"Makes it at run time, owned by {owner or 'the default owner'}: {request_words(form.request)}. "
                     "Code sync never "
                     "changes it; e edits it, D deletes it."),
        captured=schedule_state(None), read_state=_read_schedule(name),
        describe=lambda state: "absent" if state[0] == "gone" else describe_schedule_state(state),
        run=_then(lambda client: client.actions.create_schedule(name, form.request, owner=owner), f"created {name}"),
    )


def edit_schedule(row: AnySchedule, request: ScheduleRequest) -> Operation:
    name = row.name
    return _schedule_op(
        row, title="Edit schedule", verb="Edit",
        consequence=f"Sets {request_words(request)}. Every other setting stays as it is; code sync never changes it.",
        run=_then(lambda client: client.actions.edit_schedule(name, request), f"edited {name}"),
    )


def delete_schedule(row: AnySchedule) -> Operation:
    name = row.name
    if row.origin != RUN_TIME:
        raise NotPossible(f"{name} is declared in code (its next deploy would bring it back): retire it "
                          "(ctrl+d) instead")
    if row.state == "retired":
        raise NotPossible(f"{name} is RETIRED: restore it (u) before deleting it")
    return _schedule_op(
        row, title="Delete schedule", verb="Delete", type_to_confirm=name,
        consequence=("It never fires again and its name is free. Its jobs, ledger and audit entries stay. "
                     "No undo: a new one (n) starts with no history."),
        run=_then(lambda client: client.actions.delete_schedule(name), f"deleted {name}"),
    )


# --- owners -----------------------------------------------------------------------------


def owner_state(row: OwnerSummary | None) -> tuple[Any, ...]:
    if row is None:
        return ("gone", 0, 0)
    return ("present", row.schedules_owned, row.schedules_retired)


def _read_owner(owner: str) -> Callable[[ConsoleBackend], Any]:
    def read(client: ConsoleBackend) -> Any:
        return owner_state(next((o for o in client.reads.list_owners() if o.owner == owner), None))

    return read


def _describe_owner(state: tuple[Any, ...]) -> str:
    if state[0] == "gone":
        return "unknown"
    return f"{state[1]} owned, {state[2]} retired"


def _owner_op(row: OwnerSummary, done: str, act: Callable[[ConsoleBackend], OwnerChange], **fields: Any) -> Operation:
    """Owner-wide retire / restore: `act` after the owner's counts are re-checked."""
    owner = row.owner
    return Operation(
        target=f"owner {owner}", captured=owner_state(row), describe=_describe_owner,
        read_state=_read_owner(owner),
        run=lambda client, _v: f"{done} owner {owner}: {act(client).count} schedules",
        **fields,
    )


def retire_owner(row: OwnerSummary) -> Operation:
    owner = row.owner
    if not row.schedules_owned:
        raise NotPossible(f"owner {owner} has no active schedule to retire")
    return _owner_op(
        row, "retired", lambda client: client.actions.retire_owner(owner),
        title="Retire owner", verb="Retire all", type_to_confirm=owner,
        consequence=(
            f"Retires every schedule of {owner} ({row.schedules_owned} active): none of them fires "
            "or can be triggered until restored. Works with no live runtime of the owner."
        ),
    )


def restore_owner(row: OwnerSummary) -> Operation:
    owner = row.owner
    if not row.schedules_retired:
        raise NotPossible(f"owner {owner} has no retired schedule")
    return _owner_op(
        row, "restored", lambda client: client.actions.restore_owner(owner),
        title="Restore owner", verb="Restore all",
        consequence=(
            f"Restores the {row.schedules_retired} retired schedules of {owner}; evaluation restarts "
            "from now, missed fires are not replayed."
        ),
    )


# --- queues -----------------------------------------------------------------------------


def queue_state(row: QueueRow | None) -> tuple[Any, ...]:
    if row is None:
        return ("gone", None)
    return ("paused" if row.paused else "active", row.paused_by)


def _read_queue(queue: str) -> Callable[[ConsoleBackend], Any]:
    def read(client: ConsoleBackend) -> Any:
        return queue_state(next((q for q in client.reads.list_queues() if q.queue == queue), None))

    return read


def _describe_queue(state: tuple[Any, ...]) -> str:
    return {"gone": "unknown", "active": "active"}.get(state[0], f"PAUSED by {state[1]}")


def toggle_queue(row: QueueRow) -> Operation:
    queue = row.queue
    common: dict[str, Any] = {
        "target": f"queue {queue}", "captured": queue_state(row),
        "read_state": _read_queue(queue),
        "describe": _describe_queue,
    }
    if row.paused:
        return Operation(
            title="Resume queue", verb="Resume",
            consequence=(
                f"Workers claim its {row.available} waiting jobs again "
                f"(paused by {row.paused_by} since {utc(row.paused_at)})."
            ),
            run=_then(lambda client: client.actions.queue_resume(queue), f"resumed queue {queue}"),
            **common,
        )
    return Operation(
        title="Pause queue", verb="Pause",
        consequence=(
            f"Workers stop claiming from it. Schedules keep firing into it ({row.schedules} "
            "target it): jobs accumulate until it is resumed. Running jobs finish."
        ),
        run=_then(lambda client: client.actions.queue_pause(queue), f"paused queue {queue}"),
        **common,
    )


# --- jobs -------------------------------------------------------------------------------

RETRYABLE_STATES = ("retryable", "discarded", "cancelled")


def job_state(job: JobSummary | None) -> tuple[Any, ...]:
    if job is None:
        return ("gone", None)
    return (job.state, job.attempt)


def _read_job(job_id: int) -> Callable[[ConsoleBackend], Any]:
    def read(client: ConsoleBackend) -> Any:
        try:
            return job_state(client.reads.job_detail(job_id).job)
        except NotFound:
            return job_state(None)

    return read


def _describe_job(state: tuple[Any, ...]) -> str:
    kind, attempt = state
    return "removed (pruned)" if kind == "gone" else f"{kind} after attempt {attempt}"


def _job_target(job: JobSummary) -> str:
    return f"job {job.id} ({job.schedule or job.kind})"


def retry_job(job: JobSummary) -> Operation:
    if job.state not in RETRYABLE_STATES:
        raise NotPossible(f"job {job.id} is {job.state}: only a failed, discarded or cancelled job can be retried")
    job_id = job.id
    return Operation(
        title="Retry job", verb="Retry", target=_job_target(job),
        consequence=(f"It waits to run again now, in queue {job.queue}: attempt {job.attempt + 1} "
                     f"(of at most {job.max_attempts} counted by the worker). Its errors so far are kept."),
        captured=job_state(job), read_state=_read_job(job_id), describe=_describe_job,
        run=_then(lambda client: client.actions.retry_job(job_id), f"retried job {job_id}: waiting to run"),
    )


def cancel_job(job: JobSummary) -> Operation:
    if job.state not in WAITING_STATES and job.state != "running":
        raise NotPossible(f"job {job.id} is {job.state}: only a waiting or running job can be cancelled")
    job_id = job.id
    consequence = (
        "The runtime running it is asked to stop its handler (an async one at once, a sync one when it "
        "looks); it then ends cancelled. The schedule keeps firing."
        if job.state == "running" else
        "It will not run: it is marked cancelled (a retry can bring it back). The schedule keeps firing.")
    return Operation(
        title="Cancel job", verb="Cancel job", target=_job_target(job),
        consequence=consequence,
        captured=job_state(job), read_state=_read_job(job_id), describe=_describe_job,
        run=_then(lambda client: client.actions.cancel_job(job_id),
                  f"asked job {job_id}'s runtime to stop it" if job.state == "running" else f"cancelled job {job_id}"),
    )


# --- alerts (S63, S71) ------------------------------------------------------------------

# What the silence dialog asks, both required (the CLI's `alerts silence --until --reason`):
# the end read as the pause dialog reads it.
SILENCE_CHOICES = (
    Choice("until", "Until", "2h, 1d or an ISO instant", _pause_end,
           lambda value: _end_words(value, "silence") + "; its alerts are sent again from then", required=True),
    Choice("reason", "Reason", "why, for the audit trail and the silences list", str, required=True),
)


def _silence(alert: AlertDelivery, by_owner: bool) -> Operation:
    """Silence the selected alert's schedule, or (`by_owner`) every schedule of the owner it
    recorded, until a time with a reason: the engine's `alerts silence`, audited as it is."""
    if alert.fleet:
        raise NotPossible("a fleet alert (no leader, a stalled leader) names no schedule: it cannot be silenced")
    name, owner = alert.name, alert.owner
    if by_owner and owner is None:
        raise NotPossible(f"{name} had no owner when it alerted: silence its schedule (s)")
    target = f"owner {owner}" if by_owner else f"schedule {name}"
    covers = f"every schedule of owner {owner}" if by_owner else name

    def run(client: ConsoleBackend, chosen: Mapping[str, Any]) -> str:
        made = client.actions.silence_alerts(None if by_owner else name, chosen["until"], chosen["reason"],
                                             owner=owner if by_owner else None)
        waiting = f" ({made.silenced} waiting alert(s) silenced)" if made.silenced else ""
        return f"silenced {made.target} until {utc(made.until)}: {made.reason}{waiting}"

    return Operation(
        title="Silence alerts", verb="Silence", target=target,
        consequence=(f"No alert of {covers} is sent to any sink until then (they show as silenced), those "
                     "waiting included; they still show in alerts list and check."),
        # Nothing to re-check: the engine refuses an unknown schedule or owner, and a silence
        # made after the alert resolved still holds its next ones.
        captured=None, read_state=lambda _client: None,
        run=lambda _client, _value: "", choices=SILENCE_CHOICES, run_chosen=run,
    )


def silence_schedule(alert: AlertDelivery) -> Operation:
    return _silence(alert, by_owner=False)


def silence_owner(alert: AlertDelivery) -> Operation:
    return _silence(alert, by_owner=True)
