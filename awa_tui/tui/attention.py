"""The words of the status bar's two live problems, shown on every panel (S75).

ATTENTION: what needs the operator wherever they are: no live or a stalled leader, the
leader's last pass given up on a held lock (and who held it), jobs of a kind no live runtime
handles, the worst unhealthy schedule (on the other panels: the schedules panel has its
own line). One line: a problem alone says it in full; several say their headlines, each
with its count, and their number is in the badge. Narrow, the last problems give up their
detail for their bare count (`tiny`), so every problem's count fits 80 columns.

STALE: how long the console's own refresh has gone unanswered, counted on the UI's clock,
and what it waits on as a second connection saw it: the session in the way, its lock and
table, never its statement's text (engine/read/blockers.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from awa_tui.engine.health.models import UnservedKind
from awa_tui.engine.read.fleet import Leadership, ReadWait, describe
from awa_tui.engine.read.models import Attention, RuntimeRow
from awa_tui.printable import printable, printable_row
from awa_tui.tui.formatting import utc
from awa_tui.tui.panels.runtimes import attention


@dataclass(frozen=True)
class Problem:
    said: str  # alone on the line: in full
    short: str  # beside others: its headline and its count
    tiny: str = ""  # beside others at 80 columns: its count and word alone ('' : the short)

    @property
    def bare(self) -> str:
        return self.tiny or self.short


def leader_problem(leadership: Leadership, own_refusal: str | None = None) -> Problem | None:
    said = attention(leadership, own_refusal)
    if said is None:
        return None
    return Problem(said, "no live leader" if not leadership.held else "leader STALLED")


def unserved_problem(kinds: Sequence[UnservedKind]) -> Problem | None:
    """'75 jobs of kind report.send waiting, no live runtime handles it' (several kinds: counted)."""
    if not kinds:
        return None
    total = sum(k.waiting for k in kinds)
    if len(kinds) == 1:
        only = printable(kinds[0].kind)
        return Problem(f"{total:,} jobs of kind {only} waiting, no live runtime handles it",
                       f"{total:,} jobs unserved (kind {only})", f"{total:,} jobs unserved")
    each = ", ".join(f"{printable(k.kind)} {k.waiting:,}" for k in kinds)
    return Problem(f"{total:,} jobs of {len(kinds)} kinds waiting, no live runtime handles them: {each}",
                   f"{total:,} jobs unserved ({len(kinds)} kinds)", f"{total:,} jobs unserved")


def pass_problem(runtimes: Sequence[RuntimeRow]) -> Problem | None:
    """The leader's last pass gave up on a lock (S59), its blockers as the runtimes panel says them."""
    leader = next((r for r in runtimes if r.role == "leader"), None)
    newest = leader.passes[0] if leader is not None and leader.passes else None
    if newest is None or not newest.timed_out:
        return None
    blockers = printable_row(newest.blockers)
    said = f"leader's last pass TIMED OUT after {newest.duration_ms / 1000:.1f} s"
    if not blockers:
        return Problem(said, "leader's pass TIMED OUT", "pass TIMED OUT")
    return Problem(f"{said}: blocked by {describe(blockers)}", f"leader's pass TIMED OUT (session {blockers[0].pid})",
                   "pass TIMED OUT")


def schedule_problem(worst: Attention | None, unhealthy: int) -> Problem | None:
    """The worst unhealthy schedule (S42), for the panels other than the schedules panel."""
    if worst is None:
        return None
    more = f" (+{unhealthy - 1:,} more unhealthy)" if unhealthy > 1 else ""
    head = f"schedule {printable(worst.name)} {worst.health.upper()}"
    since = f" since {utc(worst.since)}" if worst.since is not None else ""
    reason = f": {printable(worst.reason)}" if worst.reason else ""
    tiny = f"{unhealthy:,} schedules unhealthy" if unhealthy > 1 else f"1 schedule {worst.health.upper()}"
    return Problem(f"{head}{more}{since}{reason}", f"{head}{more}", tiny)


def attention_line(problems: Sequence[Problem | None]) -> tuple[str | None, int]:
    """The line and how many problems it holds, most urgent first: one in full, several by
    their headlines (the count goes in the badge)."""
    forms = attention_forms(problems)
    return (forms[0] if forms else None), len([p for p in problems if p is not None])


def attention_forms(problems: Sequence[Problem | None]) -> tuple[str, ...]:
    """The line in its forms, widest first (the status bar shows the first that fits): one
    problem in full; several by their headlines, then the last ones, one by one from the
    end, by their bare counts. () : no problem."""
    found = [p for p in problems if p is not None]
    if len(found) <= 1:
        return tuple(p.said for p in found)
    return tuple(dict.fromkeys(" · ".join([p.short for p in found[:kept]] + [p.bare for p in found[kept:]])
                               for kept in range(len(found), -1, -1)))


def wait_text(wait: ReadWait | None, error: str | None = None) -> str:
    """What the stuck refresh waits on: 'pid 4242 holds ACCESS EXCLUSIVE on table awa.cron_jobs
    (user alice, psql, idle in transaction: LOCK TABLE awa.cron_jobs)'; '' before anyone looked."""
    if error is not None:
        return f"could not tell what it waits on ({error})"
    if wait is None:
        return ""
    if not wait.held:
        return "it waits on no lock (a slow statement, or the network)"
    first = wait.held[0]
    b = first.blocker
    holds = f"holds {first.mode} on" if first.mode else "is ahead of it for"
    more = f" (+{len(wait.held) - 1} more sessions)" if len(wait.held) > 1 else ""
    return (f"pid {b.pid} {holds} {b.waited_for or 'a lock'} (user {b.user or 'unknown'}, "
            f"{b.application or 'no application name'}, {b.state or 'unknown'}: "
            f"{b.kind or 'statement not shown'}){more}")


def stall_text(running_s: float, waits: str) -> str:
    """'no answer for 9s: pid 4242 holds ...' (the counter first: it moves every second)."""
    return f"no answer for {int(running_s)}s" + (f": {waits}" if waits else "")
