"""When a runtime counts as alive (S21), in one place for every query that asks."""

from __future__ import annotations

from datetime import timedelta

# S21: a runtime is fresh iff it has not stopped and
# now - last_seen_at <= max(30 s, 3 x snapshot_interval), judged in DB time.
FRESH_MIN = timedelta(seconds=30)


def fresh_window_sql(alias: str = "") -> str:
    """max(30 s, 3 x snapshot_interval) of a runtime row, as SQL."""
    r = f"{alias}." if alias else ""
    # Clamped before the product: a hand-written '178000000 years' would overflow it and
    # fail the whole query (S15); no real runtime snapshots less often than daily.
    interval = f"least(greatest({r}snapshot_interval, interval '0'), interval '1 day')"
    return f"greatest(interval '{int(FRESH_MIN.total_seconds())} seconds', 3 * {interval})"


def fresh_sql(now_sql: str = "now()", alias: str = "") -> str:
    """The S21 freshness predicate over awa.runtime_instances, for embedding in queries.

    `now_sql` is trusted SQL (a parameter placeholder or now()), never user input."""
    r = f"{alias}." if alias else ""
    # CASE orders the tests: an infinite last_seen_at (written by hand, S15) must never reach
    # the subtraction, which PG 15 refuses, and never counts as alive.
    return (
        f"(CASE WHEN {r}stopped_at IS NULL AND awa.ts_loadable({r}last_seen_at) "
        f"THEN {now_sql} - {r}last_seen_at <= {fresh_window_sql(alias)} ELSE false END)"
    )
