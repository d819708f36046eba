"""The engine's defaults and bounds, and the checks of the values a Client is built with,
as plain values: this module imports nothing of the engine but its errors.

The Client's signature and the CLI's options name these; the modules that apply them
(backfill, retention, the leader, bulk actions) load only when they are used, so
`awa-tui cron show` does not import the whole engine to read a default (it starts faster).
"""

from __future__ import annotations

from datetime import timedelta

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.errors import short_repr as _short

# Fires of one schedule per pass at most: what a long outage catches up at once.
CATCH_UP_LIMIT = 1000
BACKFILL_LIMIT = 1000  # instants per backfill unless the operator passes a higher max

# The leader's lease (engine/runtime/leader.py): how long a silent leader keeps it.
DEFAULT_LEASE = timedelta(seconds=5)
MIN_LEASE = timedelta(seconds=1)
# S70: nobody leading (or a frozen leader) is alerted this long after the last lease ended,
# so a takeover (within 2 s of the lease's end) or a rolling restart alerts nobody; a leader
# renewing its lease with no completed pass for this long (beyond its snapshot interval) is
# alerted as stalled.
DEFAULT_FLEET_GRACE = timedelta(seconds=10)
DEFAULT_FLEET_STALL_AFTER = timedelta(seconds=30)
MAX_FLEET_THRESHOLD = timedelta(days=1)

# The evaluator's own statements wait for a lock at most this long, and run at most this
# long, then the pass gives up, says what blocked it and is retried (engine/firing/evaluator.py).
# The lock wait stays within the lease (a blocked pass is reported before a lease's worth
# of fires is late; half the lease by default); a healthy fire statement takes ~0.1-1.3 s
# (5000 fires, 1M schedules, bench/), so the statement bound only catches a runaway one. A
# shorter statement_timeout set on the role or database is kept: the evaluator then fires
# in smaller statements.
DEFAULT_LOCK_TIMEOUT = timedelta(seconds=2)
MIN_LOCK_TIMEOUT = timedelta(milliseconds=100)
DEFAULT_STATEMENT_TIMEOUT = timedelta(seconds=30)
MAX_STATEMENT_TIMEOUT = timedelta(minutes=10)

# Finished jobs older than this are pruned, each schedule's last DEFAULT_KEEP kept
# (engine/ledger/retention.py).
DEFAULT_HORIZON = timedelta(days=14)
DEFAULT_KEEP = 50
MAX_KEEP = 100000
# A prune by hand runs beside live runtimes: half of the time it waits. Measured with
# bench/prune_during_fire.py (2 shared cores): 10k-fire passes, p50 0.62 s alone, 0.96 s
# beside an unpaced 1M-row prune, 0.86 s beside this paced one.
MANUAL_DUTY = 0.5

# Bulk actions (engine/actions/bulk.py): names per transaction.
BATCH_SIZE = 500
MAX_BATCH_SIZE = 10_000

# The job runner (engine/jobs/): jobs run at once per process, and how long running jobs
# get to finish when the process is asked to stop (then they are released). The grace
# fits inside a Kubernetes pod's terminationGracePeriodSeconds of 30 with 5 s to spare for
# the release, the final snapshot and the leader lock (deploy/kubernetes/deployment.yaml).
DEFAULT_CONCURRENCY = 10
DEFAULT_SHUTDOWN_GRACE = timedelta(seconds=25)
MAX_SHUTDOWN_GRACE = timedelta(hours=1)


def check_grace(value: object) -> timedelta:
    """A shutdown grace: a timedelta or seconds, from 0 (release at once) to an hour."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = timedelta(seconds=value)
    if not isinstance(value, timedelta) or not timedelta(0) <= value <= MAX_SHUTDOWN_GRACE:
        shown = f"{value.total_seconds():g} s" if isinstance(value, timedelta) else _short(value)
        raise ValidationError(f"shutdown_grace: from 0 to 3600 seconds, got {shown}")
    return value


# The leader evaluates health at this cadence (so health changed by time passing alone,
# late or missed, is caught within it); `check` calls an older evaluation stalled.
HEALTH_INTERVAL_S = 10.0

# S41: a due instant must be enqueued within this unless the schedule or its client says
# otherwise (a stored NULL means this too).
DEFAULT_MAX_LATENESS_S = 60
# A due fire not made this long after its instant is OVERDUE: a live leader fires within
# about a second of it (its pass runs every second), so past this nobody is firing it.
OVERDUE_AFTER_S = 5
# `awa-tui check` answers within this (its --timeout): a lock it waits on makes it UNKNOWN.
CHECK_TIMEOUT = timedelta(seconds=10)
MAX_EXPECTATION_S = 366 * 86400  # a year: longer is a typo, and fits an integer column


# The grace spans at least two of a runtime's fleet watches (every 2 s): a leader that steps
# down and takes the lock again between two of them is never seen as nobody leading.
MIN_FLEET_GRACE = timedelta(seconds=4)


def check_fleet_threshold(fname: str, value: object, least: timedelta = timedelta(seconds=1)) -> timedelta:
    """A fleet alert's threshold (S70): a timedelta from `least` to a day. Worded for the API
    and the CLI alike (`fname` is the keyword or the option)."""
    if not isinstance(value, timedelta) or not least <= value <= MAX_FLEET_THRESHOLD:
        shown = f"{value.total_seconds():g} s" if isinstance(value, timedelta) else _short(value)
        raise ValidationError(f"{fname}: from {least.total_seconds():g} s to a day, got {shown}")
    return value


def check_seconds(fname: str, value: object) -> int | None:
    """A duration expectation as whole seconds (a timedelta or a number), or None; zero
    and negative durations are refused (S41)."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds: object = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value
    else:
        raise ValidationError(f"{fname}: expected a timedelta or a number of seconds, got {_short(value)}")
    assert isinstance(seconds, (int, float))
    if seconds != seconds or seconds <= 0:  # NaN too
        raise ValidationError(f"{fname}: must be positive, got {_short(value)}")
    if seconds != int(seconds):
        raise ValidationError(f"{fname}: must be a whole number of seconds, got {seconds:g} s")
    if seconds > MAX_EXPECTATION_S:
        raise ValidationError(f"{fname}: at most {MAX_EXPECTATION_S} s (a year), got {seconds:g} s")
    return int(seconds)


def check_keep(keep: int) -> int:
    if not isinstance(keep, int) or not 0 <= keep <= MAX_KEEP:
        raise ValidationError(f"keep: expected 0..{MAX_KEEP} jobs per schedule, got {keep!r}")
    return keep


def check_horizon(older_than: timedelta) -> timedelta:
    if not isinstance(older_than, timedelta) or older_than < timedelta(0):
        raise ValidationError(f"older than: expected a duration of 0 or more, got {older_than!r}")
    return older_than


def pass_timeouts(lock_timeout: timedelta | None, statement_timeout: timedelta,
                  lease: timedelta) -> tuple[timedelta, timedelta]:
    """The evaluator's lock and statement timeouts, checked: MIN_LOCK_TIMEOUT <= lock <=
    the lease, lock <= statement <= MAX_STATEMENT_TIMEOUT. No lock timeout given: the
    default, or half the lease when that is shorter."""
    if lock_timeout is None:
        lock_timeout = min(DEFAULT_LOCK_TIMEOUT, lease / 2)
    for fname, value in (("lock_timeout", lock_timeout), ("statement_timeout", statement_timeout)):
        if not isinstance(value, timedelta):
            raise ValidationError(f"{fname}: expected a timedelta, got {_short(value)}")
    if not MIN_LOCK_TIMEOUT <= lock_timeout <= lease:
        raise ValidationError(
            f"lock_timeout: must be between {MIN_LOCK_TIMEOUT.total_seconds():g} s and the leader lease "
            f"({lease.total_seconds():g} s), got {lock_timeout.total_seconds():g} s")
    if not lock_timeout <= statement_timeout <= MAX_STATEMENT_TIMEOUT:
        raise ValidationError(
            f"statement_timeout: must be between the lock timeout ({lock_timeout.total_seconds():g} s) and "
            f"{MAX_STATEMENT_TIMEOUT.total_seconds():g} s, got {statement_timeout.total_seconds():g} s")
    return lock_timeout, statement_timeout


def check_runtime_timings(retire_grace: timedelta, snapshot_interval: timedelta, leader_lease: object) -> None:
    """A Client's runtime timings: a grace that is not negative, a positive snapshot
    interval and a lease of at least MIN_LEASE, each refused in one line."""
    if retire_grace < timedelta(0):
        raise ValidationError(f"retire_grace: must not be negative, got {retire_grace}")
    if snapshot_interval <= timedelta(0):
        raise ValidationError(f"snapshot_interval: must be positive, got {snapshot_interval}")
    if not isinstance(leader_lease, timedelta) or leader_lease < MIN_LEASE:
        got = f"{leader_lease.total_seconds():g} s" if isinstance(leader_lease, timedelta) else repr(leader_lease)
        raise ValidationError(
            f"leader_lease: must be a timedelta of at least {MIN_LEASE.total_seconds():g} s, got {got}")
