"""A fleet that uses the day forms and calendars: the per-pass targets with them mixed in.

N schedules, of which every tenth (`i % 10 == 0`) uses a day form (`DAY#k`, the weekday
and occurrence of the boundary's own date, so it is due like the others) and every tenth
from 1 (`i % 10 == 1`) names a calendar that excludes the boundary's date; the rest are
plain. Two measurements, held to the targets their plain twins have:

- **idle pass, mixed**: a yearly fleet mixed the same way (`0 0 L 2 *` for the day forms),
  50 evaluator passes called directly once every hint is written (idle.direct_passes):
  < 5 ms database time and < 2 ms Python CPU per pass, median;
- **fire on time, mixed**: a per-minute fleet all due at one boundary under a running
  runtime (registered as `awa-tui run` registers, the mix in its own definitions): the
  lateness of the jobs at the boundary (p50 < 2.5 s and every fire < 5 s at 100k, p99 < 1 s
  at 10k), exactly the schedules not excluded fired (N - N/10), none doubled, and every
  excluded schedule passed over, its last fire moved to the boundary with no job.
"""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta
from typing import Any

from bench.common import (
    BENCH_KIND,
    BENCH_QUEUE,
    Report,
    Row,
    Server,
    collect_fires,
    connect,
    db_now,
    percentile,
    wait_until,
)
from bench.engines import Engine
from bench.scenarios import idle
from bench.scenarios.fire_on_time import ALL_TARGET_S, P50_TARGET_100K_S, P99_TARGET_S, lead_seconds

CALENDAR = "bench-holidays"
DAY_NAMES = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
YEARLY, LAST_OF_FEBRUARY = "0 0 1 1 *", "0 0 L 2 *"

# The mix in SQL, so the seeded rows are what the runtime's own definitions say (its first
# sync then finds them in agreement); `i` is the schedule's number, as bench_names() counts.
SEED_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, missed_fire_policy, last_enqueued_at,
                           exclude_calendars)
SELECT 'bench-' || lpad(i::text, greatest(6, length(i::text)), '0'),
       CASE WHEN i %% 10 = 0 THEN %(form)s ELSE %(plain)s END, 'UTC', %(kind)s, %(queue)s, '{}'::jsonb,
       'coalesce', %(last)s, CASE WHEN i %% 10 = 1 THEN %(calendars)s::jsonb END
FROM generate_series(1, %(n)s) AS i
"""


def occurrence(day: date) -> str:
    """`DAY#k` naming `day` itself: its weekday and which of the month's it is."""
    return f"{DAY_NAMES[day.weekday()]}#{(day.day - 1) // 7 + 1}"


def excluded(n: int) -> int:
    return sum(1 for i in range(1, n + 1) if i % 10 == 1)


def seed(dsn: str, n: int, plain: str, form: str, last: datetime | None, holiday: date) -> None:
    from awa_tui import Client

    client = Client(dsn, application_name="bench-calendar-mix", operator="bench")
    try:
        # A calendar of a year of dates around the boundary's: the boundary's date excluded.
        client.actions.set_calendar(CALENDAR, [holiday + timedelta(days=7 * k) for k in range(-26, 27)])
    finally:
        client.close()
    with connect(dsn) as conn:
        conn.execute(SEED_SQL, {"plain": plain, "form": form, "kind": BENCH_KIND, "queue": BENCH_QUEUE,
                                "last": last, "n": n, "calendars": f'["{CALENDAR}"]'})
        conn.execute("ANALYZE awa.cron_jobs")


def register(dsn: str, n: int, plain: str, form: str) -> Any:
    from awa_tui import Client

    client = Client(dsn, application_name="bench-calendar-mix", operator="bench")
    for i in range(1, n + 1):
        expr = form if i % 10 == 0 else plain
        client.periodic(f"bench-{i:06d}", expr, BENCH_KIND, None, queue=BENCH_QUEUE, missed_fire_policy="coalesce",
                        calendar=CALENDAR if i % 10 == 1 else None)
    return client


def idle_passes(server: Server, engine: Engine, n: int) -> dict[str, float | None]:
    with server.database(f"calmix_idle_{n}") as dsn:
        engine.migrate(dsn)
        # Last fired now: neither the yearly nor the last-of-February rows are due.
        now = db_now(dsn)
        seed(dsn, n, YEARLY, LAST_OF_FEBRUARY, now, now.date())
        return idle.direct_passes(server, dsn)


def advanced(dsn: str, boundary: datetime) -> dict[str, int]:
    """Schedules whose last fire reached the boundary, and of those the excluded ones."""
    with connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) AS moved, count(*) FILTER (WHERE exclude_calendars IS NOT NULL) AS excluded_moved "
            "FROM awa.cron_jobs WHERE last_enqueued_at >= %s", (boundary,)).fetchone()
        jobs = conn.execute(
            "SELECT count(*) AS n FROM awa.jobs j JOIN awa.cron_jobs c ON c.name = j.metadata ->> 'cron_name' "
            "WHERE c.exclude_calendars IS NOT NULL").fetchone()
    return {"moved": row["moved"], "excluded_moved": row["excluded_moved"], "excluded_jobs": jobs["n"]}


def fire_at_boundary(server: Server, engine: Engine, n: int) -> dict[str, Any]:
    from awa_tui.engine.runtime.heap import registered_then_frozen

    with server.database(f"calmix_fire_{n}") as dsn:
        engine.migrate(dsn)
        boundary = (db_now(dsn) + timedelta(seconds=lead_seconds(engine, n))).replace(microsecond=0)
        plain = f"{boundary.second} * * * * *"
        form = f"{boundary.second} * * * * {occurrence(boundary.date())}"
        seed(dsn, n, plain, form, boundary - timedelta(minutes=1), boundary.date())
        client, _ = registered_then_frozen(lambda: register(dsn, n, plain, form))
        client.start(run_worker=False)
        try:
            settle = max(0.0, (boundary - db_now(dsn)).total_seconds()) + (20 if n <= 10000 else 30)
            wait_until(lambda: advanced(dsn, boundary)["moved"] >= n, time.monotonic() + settle, interval=1.0)
        finally:
            client.close()
        fires = collect_fires(dsn, "ours", server.commit_ts, boundary, boundary + timedelta(seconds=1))
        moved = advanced(dsn, boundary)
    return {"fires": fires, **moved}


def run(server: Server, engine: Engine, sizes: list[int], report: Report, upstream: Engine | None) -> None:
    for n in sizes:
        size = f"{n:,}, 10 % day forms, 10 % calendar"
        direct = idle_passes(server, engine, n)
        report.add(Row("calendar mix", size, f"idle pass DB time, median of {idle.PASSES}",
                       f"< {idle.DB_TARGET_MS:g} ms", direct["db"], "ms",
                       direct["db"] is not None and direct["db"] < idle.DB_TARGET_MS))
        report.add(Row("calendar mix", size, f"idle pass Python CPU, median of {idle.PASSES}",
                       f"< {idle.CPU_TARGET_MS:g} ms", direct["cpu"], "ms",
                       direct["cpu"] is not None and direct["cpu"] < idle.CPU_TARGET_MS))
        result = fire_at_boundary(server, engine, n)
        late = result["fires"].lateness
        want = n - excluded(n)
        big, small = n >= 100000, n <= 10000
        p50, p99, worst = percentile(late, 0.5), percentile(late, 0.99), max(late) if late else None
        report.add(Row("calendar mix", size, "lateness p50", f"< {P50_TARGET_100K_S} s" if big else "", p50, "s",
                       (p50 is not None and p50 < P50_TARGET_100K_S) if big else None))
        report.add(Row("calendar mix", size, "lateness p99", f"< {P99_TARGET_S} s" if small else "", p99, "s",
                       (p99 is not None and p99 < P99_TARGET_S) if small else None))
        report.add(Row("calendar mix", size, "lateness max", f"< {ALL_TARGET_S} s" if big else "", worst, "s",
                       (worst is not None and worst < ALL_TARGET_S) if big else None))
        report.add(Row("calendar mix", size, "fired (not excluded)", f"{want:,}", float(len(late)), "",
                       len(late) == want))
        report.add(Row("calendar mix", size, "doubled", "0", float(result["fires"].doubled), "",
                       result["fires"].doubled == 0))
        report.add(Row("calendar mix", size, "excluded: passed over, no job", f"{excluded(n):,}",
                       float(result["excluded_moved"]), "",
                       result["excluded_moved"] == excluded(n) and result["excluded_jobs"] == 0,
                       note=f"{result['excluded_jobs']} jobs of excluded schedules"))
