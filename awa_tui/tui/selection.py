"""Bulk actions on a selection of schedules: what one confirmation says (the count, the
first few names; the dialog adds the database and the operator) and the engine call
(Client.bulk: one transaction per batch, one audit row per schedule, a refused row
skipped with its reason while the others go on)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from awa_tui.printable import printable
from awa_tui.tui.operations import PAUSE_CHOICES, PAUSE_CHOICES_NEED, NotPossible, Operation

SHOWN_NAMES = 3

# action -> (title, verb, consequence)
BULK = {
    "pause": ("Pause schedules", "Pause", "Each stops firing until resumed (or the end below); one already paused "
              "is skipped, or given the end and reason below when they are set."),
    "resume": ("Resume schedules", "Resume",
               "Each fires again; its policy decides what fires for its paused period (coalesce once, "
               "catch_up each missed fire). One not paused is skipped."),
    "trigger": ("Trigger schedules now", "Trigger", "One job of each is enqueued now; a retired one is skipped."),
    "retire": ("Retire schedules", "Retire",
               "Each becomes a tombstone: it never fires again until restored; one already retired is skipped."),
    "restore": ("Restore schedules", "Restore",
                "Each retired one fires again from its next fire (no replay); one not retired is skipped."),
    "adopt": ("Adopt schedules", "Adopt",
              "The owner's manifest becomes authoritative for each unowned one; an owned one is skipped."),
}


def marked_range(order: Sequence[str], anchor: str | None, cursor: str) -> list[str]:
    """The rows a range mark selects: from `anchor` (the row last selected) to `cursor`,
    both included, in `order` (the table's), whichever comes first; no anchor, or one no
    longer in `order`: the cursor's row alone."""
    if anchor is None or anchor not in order:
        return [cursor]
    start, end = sorted((order.index(anchor), order.index(cursor)))
    return list(order[start:end + 1])


def names_line(names: Sequence[str], shown: int = SHOWN_NAMES) -> str:
    """'3 schedules: a, b, c' / '12 schedules: a, b, c and 9 more' (escaped names)."""
    count = len(names)
    head = ", ".join(printable(n) for n in names[:shown])
    more = f" and {count - shown} more" if count > shown else ""
    return f"{count} schedule{'s' if count != 1 else ''}: {head}{more}"


def result_line(result: Any) -> str:
    """One line of what a bulk action did: counts, then the first refusals with reasons."""
    done = f"{result.action}: {len(result.done)} done"
    if result.owner:
        done += f" (owner {printable(result.owner)})"
    if not result.skipped:
        return done
    reasons = "; ".join(f"{printable(s.name)}: {printable(s.reason)}" for s in result.skipped[:SHOWN_NAMES])
    more = f"; and {len(result.skipped) - SHOWN_NAMES} more" if len(result.skipped) > SHOWN_NAMES else ""
    return f"{done}, {len(result.skipped)} skipped ({reasons}{more})"


def bulk_operation(action: str, names: Sequence[str], owners: tuple[str, ...] = ()) -> Operation:
    """One confirmation for `action` on every selected schedule (real names, not shown ones)."""
    if not names:
        raise NotPossible("nothing selected (space selects a row, * or ctrl+a the filtered set)")
    title, verb, consequence = BULK[action]
    chosen = tuple(names)

    def run(client: Any, value: str) -> str:
        owner = value if action == "adopt" else None
        return result_line(client.actions.bulk(action, chosen, owner=owner))

    def preview(client: Any, now: datetime | None) -> str:
        return resume_totals(chosen, client, now)

    def pause(client: Any, given: Mapping[str, Any]) -> str:
        # S65: the same end and reason for each, as `cron pause NAMES --until --reason`.
        return result_line(client.actions.bulk("pause", chosen, until=given.get("until"), reason=given.get("reason")))

    return Operation(
        title=title, verb=verb, target=names_line(chosen), consequence=consequence,
        preview=preview if action == "resume" else None,
        listed=chosen if len(chosen) > SHOWN_NAMES else (),
        # Client.bulk re-checks every row under its lock and skips what changed: nothing to capture.
        captured=None, read_state=lambda client: None, run=run,
        type_to_confirm=f"{action} {len(chosen)}" if action == "retire" else None,
        ask="new owner" if action == "adopt" else None, suggestions=owners if action == "adopt" else (),
        asks_owner=action == "adopt",
        choices=PAUSE_CHOICES if action == "pause" else (), run_chosen=pause if action == "pause" else None,
        choices_need=PAUSE_CHOICES_NEED if action == "pause" else None,
    )


PREVIEWED_MAX = 500  # a bulk resume previews at most this many (one read each)


def resume_totals(names: Sequence[str], client: Any, now: datetime | None) -> str:
    """What resuming every one of `names` fires now, in totals: the jobs, the schedules
    that fire once or catch up, those that fire nothing yet, those skipped (not paused)."""
    from awa_tui.engine.core.errors import AwaError

    jobs = once = caught_up = quiet = 0
    more = False
    skipped: list[str] = []
    for name in names[:PREVIEWED_MAX]:
        try:
            p = client.reads.resume_preview(name, now=now)
        except AwaError as exc:  # not paused, gone, unreadable: the bulk action skips it too
            skipped.append(f"{printable(name)}: {printable(str(exc))}")
            continue
        jobs += p.count
        more = more or p.more
        if p.count == 0:
            quiet += 1
        elif p.policy == "catch_up" and p.count > 1:
            caught_up += 1
        else:
            once += 1
    parts = [f"{once} fire once" if once else "", f"{caught_up} catch up" if caught_up else "",
             f"{quiet} fire nothing until their next instant" if quiet else ""]
    line = f"Resuming fires {jobs} job{'s' if jobs != 1 else ''} now" + (" (and more in the passes after)"
                                                                         if more else "")
    line += ": " + ", ".join(p for p in parts if p) if any(parts) else ""
    if skipped:
        line += f"; {len(skipped)} skipped ({'; '.join(skipped[:SHOWN_NAMES])}"
        line += f"; and {len(skipped) - SHOWN_NAMES} more)" if len(skipped) > SHOWN_NAMES else ")"
    if len(names) > PREVIEWED_MAX:
        line += f"; the first {PREVIEWED_MAX} previewed"
    return line + "."


def declared_adoption(owner: str, at: datetime | None) -> Operation:
    """'Adopt every unowned schedule owner O's manifest declares' (Client.adopt_declared);
    the dialog shows the dry run's count and first names before asking. `at`: the time
    the panel's data was read (declarations are fresh or not at that time; None = DB time)."""

    def preview(client: Any, now: Any) -> str:
        would = client.actions.adopt_declared(owner, dry_run=True, now=at)
        if not would.done:
            return f"Would adopt nothing: no unowned schedule is declared by a fresh runtime of {owner}."
        return f"Would adopt {names_line(would.done)}."

    def run(client: Any, value: str) -> str:
        return result_line(client.actions.adopt_declared(owner, now=at))

    return Operation(
        title=f"Adopt every unowned schedule {owner} declares", verb="Adopt",
        target=f"unowned schedules declared by owner {owner}",
        consequence=(f"Each becomes owned by {owner}, whose manifest then governs it; one adopted meanwhile "
                     "is skipped."),
        captured=None, read_state=lambda client: None, run=run, preview=preview,
    )
