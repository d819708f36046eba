"""Operator actions as values: what the confirm screen shows, what is re-checked at
confirm time, and the engine call that does it.

The target is captured when the key is pressed (the row the operator was looking at).
At confirm time its state is read again; if it changed in between (another operator, the
reconciler), the action is refused and says why, rather than acting on a state the
operator never saw. The engine's own guards (row locks, "already paused") cover the
instant between that re-read and the action.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from awa_tui.engine.errors import Conflict, NotFound
from awa_tui.tui.formatting import STATE_WORDS, state_word, utc


class Refused(Conflict):
    """The target changed between the keypress and the confirmation."""


class NotPossible(Exception):
    """The action makes no sense for the selected row (said at keypress, no dialog)."""


@dataclass(frozen=True)
class Operation:
    title: str  # "Pause schedule"
    verb: str  # button text: "Pause"
    target: str  # what is acted on, as shown
    consequence: str
    captured: Any  # state fingerprint at keypress
    read_state: Callable[[Any], Any]  # client -> fingerprint now
    run: Callable[[Any, str], str]  # (client, typed value) -> one-line result
    describe: Callable[[Any], str] = str  # fingerprint -> words, for refusals
    type_to_confirm: str | None = None  # the operator must type this exact text
    ask: str | None = None  # label of a value to ask for (e.g. an owner name)
    suggestions: tuple[str, ...] = ()
    asks_owner: bool = False  # the value asked for is an owner: the dialog says if no runtime declares it
    # (client, now) -> what it would do, read before the dialog opens (now: the console's clock, None = DB time)
    preview: Callable[[Any, Any], str] | None = None

    def execute(self, client: Any, value: str) -> str:
        """Runs on the writer thread: re-check, then act."""
        now = self.read_state(client)
        if now != self.captured:
            raise Refused(
                f"refused: {self.target} changed since you chose it "
                f"(was {self.describe(self.captured)}, now {self.describe(now)}); nothing was done"
            )
        return self.run(client, value)


def _call(
    method: str, *args: str, done: str | Callable[[str], str], with_value: bool = False
) -> Callable[[Any, str], str]:
    """Call `client.<method>(*args[, value])`; `done` is the result line (or makes it from the value)."""

    def run(client: Any, value: str) -> str:
        getattr(client, method)(*args, *((value,) if with_value else ()))
        return done(value) if callable(done) else done

    return run


# --- schedules --------------------------------------------------------------------------


def schedule_state(row: dict[str, Any] | None) -> tuple[Any, ...]:
    if row is None:
        return ("gone", None, None)
    return (row["state"], row.get("paused_by") or row.get("retired_by"), row.get("owner"))


def describe_schedule_state(state: tuple[Any, ...]) -> str:
    kind, by, owner = state
    if kind == "gone":
        return "removed"
    text = f"{state_word(kind)} by {by}" if kind in STATE_WORDS else state_word(kind)
    return f"{text}, owner {owner or 'none'}"


def _read_schedule(name: str) -> Callable[[Any], Any]:
    def read(client: Any) -> Any:
        try:
            return schedule_state(client.get_schedule(name))
        except NotFound:
            return schedule_state(None)

    return read


def _schedule_op(row: dict[str, Any], **fields: Any) -> Operation:
    name = row["name"]
    return Operation(
        target=f"schedule {name}",
        captured=schedule_state(row),
        read_state=_read_schedule(name),
        describe=describe_schedule_state,
        **fields,
    )


def toggle_pause(row: dict[str, Any]) -> Operation:
    name = row["name"]
    if row["state"] == "retired":
        raise NotPossible(f"{name} is RETIRED: restore it first (u)")
    if row["state"] == "paused":
        return _schedule_op(
            row, title="Resume schedule", verb="Resume",
            consequence=(
                f"Clears the pause (by {row['paused_by']}). Its policy ({row['missed_fire_policy']}) decides "
                "what fires for the paused period: coalesce fires once, catch_up each missed fire in order."
            ),
            run=_call("resume", name, done=f"resumed {name}"),
            preview=lambda client, now: client.resume_preview(name, now=now).explanation,
        )
    queue_note = f" Its queue {row['queue']} is PAUSED too." if row.get("queue_paused") else ""
    return _schedule_op(
        row, title="Pause schedule", verb="Pause",
        consequence=(
            "No new fires until resumed. Jobs already enqueued, running or retrying are not affected."
            + queue_note
        ),
        run=_call("pause", name, done=f"paused {name}"),
    )


def trigger(row: dict[str, Any]) -> Operation:
    name = row["name"]
    if row["state"] == "retired":
        raise NotPossible(f"{name} is RETIRED and cannot be triggered: restore it first (u)")
    notes = []
    if row["state"] == "paused":
        notes.append("The schedule stays PAUSED.")
    if row.get("queue_paused"):
        notes.append(f"Queue {row['queue']} is PAUSED: the job waits until it is resumed.")

    def run(client: Any, _value: str) -> str:
        job = client.trigger(name)
        return f"triggered {name}: job {job['id']} in queue {job['queue']}"

    return _schedule_op(
        row, title="Trigger schedule", verb="Trigger",
        consequence=" ".join(
            ["Enqueues one job now (metadata triggered_manually=true); the fire schedule is unchanged.", *notes]
        ),
        run=run,
    )


def retire(row: dict[str, Any]) -> Operation:
    name = row["name"]
    if row["state"] == "retired":
        raise NotPossible(f"{name} is already RETIRED (by {row.get('retired_by')})")
    return _schedule_op(
        row, title="Retire schedule", verb="Retire",
        consequence=(
            "It stops firing and cannot be triggered; the row stays as a tombstone that no deploy "
            "revives. Undo with restore (u), which does not replay missed fires."
        ),
        type_to_confirm=name,
        run=_call("retire", name, done=f"retired {name}"),
    )


def restore(row: dict[str, Any]) -> Operation:
    name = row["name"]
    if row["state"] != "retired":
        raise NotPossible(f"{name} is not retired; nothing to restore")
    paused = " It stays PAUSED." if row.get("paused_at") else ""
    return _schedule_op(
        row, title="Restore schedule", verb="Restore",
        consequence=(
            "Clears the tombstone; evaluation restarts from now: no fire from the retired period "
            f"is replayed, whatever the policy.{paused}"
        ),
        run=_call("restore", name, done=f"restored {name}"),
    )


def adopt_or_transfer(row: dict[str, Any], owners: tuple[str, ...]) -> Operation:
    name = row["name"]
    owner = row.get("owner")
    if row["state"] == "retired":
        raise NotPossible(f"{name} is RETIRED: restore it before changing its owner")
    if owner is None:
        return _schedule_op(
            row, title="Adopt schedule", verb="Adopt", ask="new owner", suggestions=owners,
            consequence=(
                "The owner's manifest becomes authoritative for it: reconciliation may update its "
                "definition, or retire it if the manifest does not name it."
            ),
            run=_call("adopt", name, done=lambda to: f"{name} adopted by {to}", with_value=True),
            asks_owner=True,
        )
    return _schedule_op(
        row, title="Transfer schedule", verb="Transfer", ask="to owner",
        suggestions=tuple(o for o in owners if o != owner),
        consequence=(
            f"Moves it from owner {owner} to another owner; the certificates of both owners are "
            "invalidated until their manifests are synchronised again."
        ),
        run=_call("transfer", name, done=lambda to: f"{name} transferred from {owner} to {to}", with_value=True),
        asks_owner=True,
    )


# --- owners -----------------------------------------------------------------------------


def owner_state(row: dict[str, Any] | None) -> tuple[Any, ...]:
    if row is None:
        return ("gone", 0, 0)
    return ("present", row.get("schedules_owned", 0), row.get("schedules_retired", 0))


def _read_listed(method: str, key: str, name: str, state: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """client -> the state fingerprint of the row of `client.<method>()` whose `key` is `name`."""

    def read(client: Any) -> Any:
        rows = {r[key]: r for r in getattr(client, method)()}
        return state(rows.get(name))

    return read


def _describe_owner(state: tuple[Any, ...]) -> str:
    if state[0] == "gone":
        return "unknown"
    return f"{state[1]} owned, {state[2]} retired"


def _owner_op(row: dict[str, Any], action: str, **fields: Any) -> Operation:
    """Owner-wide retire / restore: `client.<action>(owner)` after the owner's counts are re-checked."""
    owner = row["owner"]
    done = "retired" if action == "retire_owner" else "restored"
    return Operation(
        target=f"owner {owner}", captured=owner_state(row), describe=_describe_owner,
        read_state=_read_listed("list_owners", "owner", owner, owner_state),
        run=lambda client, _v: f"{done} owner {owner}: {_count(getattr(client, action)(owner))}",
        **fields,
    )


def retire_owner(row: dict[str, Any]) -> Operation:
    owner = row["owner"]
    if not row.get("schedules_owned"):
        raise NotPossible(f"owner {owner} has no active schedule to retire")
    return _owner_op(
        row, "retire_owner", title="Retire owner", verb="Retire all", type_to_confirm=owner,
        consequence=(
            f"Retires every schedule of {owner} ({row.get('schedules_owned', 0)} active): none of them fires "
            "or can be triggered until restored. Works with no live runtime of the owner."
        ),
    )


def restore_owner(row: dict[str, Any]) -> Operation:
    owner = row["owner"]
    if not row.get("schedules_retired"):
        raise NotPossible(f"owner {owner} has no retired schedule")
    return _owner_op(
        row, "restore_owner", title="Restore owner", verb="Restore all",
        consequence=(
            f"Restores the {row.get('schedules_retired')} retired schedules of {owner}; evaluation restarts "
            "from now, missed fires are not replayed."
        ),
    )


def _count(result: dict[str, Any]) -> str:
    """retire_owner / restore_owner return {owner, at, names, count}."""
    return f"{result.get('count', len(result.get('names') or []))} schedules"


# --- queues -----------------------------------------------------------------------------


def queue_state(row: dict[str, Any] | None) -> tuple[Any, ...]:
    if row is None:
        return ("gone", None)
    return ("paused" if row["paused"] else "active", row.get("paused_by"))


def _describe_queue(state: tuple[Any, ...]) -> str:
    return {"gone": "unknown", "active": "active"}.get(state[0], f"PAUSED by {state[1]}")


def toggle_queue(row: dict[str, Any]) -> Operation:
    queue = row["queue"]
    common = {
        "target": f"queue {queue}", "captured": queue_state(row),
        "read_state": _read_listed("list_queues", "queue", queue, queue_state),
        "describe": _describe_queue,
    }
    if row["paused"]:
        return Operation(
            title="Resume queue", verb="Resume",
            consequence=(
                f"Workers claim its {row.get('available', 0)} waiting jobs again "
                f"(paused by {row.get('paused_by')} since {utc(row.get('paused_at'))})."
            ),
            run=_call("queue_resume", queue, done=f"resumed queue {queue}"),
            **common,
        )
    return Operation(
        title="Pause queue", verb="Pause",
        consequence=(
            f"Workers stop claiming from it. Schedules keep firing into it ({row.get('schedules', 0)} "
            "target it): jobs accumulate until it is resumed. Running jobs finish."
        ),
        run=_call("queue_pause", queue, done=f"paused queue {queue}"),
        **common,
    )
