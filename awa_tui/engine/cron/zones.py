"""Wall clock <-> UTC under the DST rules of S14.

Cron matching runs on naive local wall-clock times (cron/fields.py knows nothing of
zones); every candidate is then mapped to one UTC instant here: a wall time inside a
spring-forward gap fires at the first instant after the gap, a wall time that occurs
twice fires at its first occurrence only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

ONE_SECOND = timedelta(seconds=1)
ONE_MINUTE = timedelta(minutes=1)


def resolve_local(naive: datetime, zone: tzinfo) -> tuple[datetime, str | None]:
    """Map a naive local wall time to its one fire instant in UTC, and a DST mark.

    Returns ("gap" if the wall time does not exist, "fold" if it occurs twice, else None).
    """
    first = naive.replace(tzinfo=zone, fold=0)
    second = naive.replace(tzinfo=zone, fold=1)
    u0 = first.astimezone(UTC)
    u1 = second.astimezone(UTC)
    if u0 == u1:
        return u0, None
    # zoneinfo: for a gap, fold=0 uses the offset before the gap (u0 later than u1);
    # for a fold, fold=0 is the first occurrence (u0 earlier than u1).
    if u0 < u1:
        return u0, "fold"
    # Inside a gap: the first instant after the gap is the transition itself, which is
    # the wall time read with the *later* offset rounded up to the gap's end.
    return gap_end(naive, zone), "gap"


def gap_end(naive: datetime, zone: tzinfo) -> datetime:
    """The UTC instant at which the gap containing `naive` ends (the transition)."""
    # Search forward in wall time for the first existing minute; gaps are < 1 day.
    lo = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)  # earlier estimate
    hi = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)  # later estimate
    # Binary search the UTC instant where the offset changes, between lo and hi.
    while hi - lo > ONE_SECOND:
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        local_mid = mid.astimezone(zone).replace(tzinfo=None)
        if local_mid < naive:
            lo = mid
        else:
            hi = mid
    # `hi` is the first second whose wall time is at or past `naive`: the transition.
    return hi


def local_naive(instant: datetime, zone: tzinfo) -> tuple[datetime, bool]:
    """Wall time of a UTC instant, and whether it is the second occurrence of a fold."""
    local = instant.astimezone(zone)
    naive = local.replace(tzinfo=None)
    if local.fold == 1:
        again = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if again != instant.astimezone(UTC):
            return naive, True
    return naive, False


def fold_end(naive: datetime, zone: tzinfo) -> datetime:
    """The first wall time after the fold that contains `naive` (both occurrences past)."""
    # The fold's length is the offset difference; its end in wall time is naive + rest.
    first = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)
    length = second - first
    # Wall times from (transition wall time) to +length repeat; step forward by minutes
    # until the wall time is no longer ambiguous.
    probe = naive
    limit = naive + length + ONE_MINUTE
    while probe <= limit:
        a = probe.replace(tzinfo=zone, fold=0).astimezone(UTC)
        b = probe.replace(tzinfo=zone, fold=1).astimezone(UTC)
        if a == b:
            return probe.replace(second=0, microsecond=0)
        probe = (probe + ONE_MINUTE).replace(second=0, microsecond=0)
    return limit
