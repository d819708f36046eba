"""Cron arithmetic, worst case: N all-distinct expressions, nothing cached.

Per expression: validate (`parse_cron`) + next fire + latest fire (what a first pass over
a never-seen schedule costs), in UTC and in a DST zone. Naive croniter (one `get_next`
on a fresh iterator, what the engine used before cronfields) is measured on a sample
for reference. Then the same N distinct schedules in the database: the evaluator's first
pass, which computes and stores every next-fire hint.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from croniter import croniter

from bench.common import Report, Row, Server, connect

SAMPLE_NAIVE = 2000
MONTHS = ["*", "1-6", "*/3", "2,4,8", "jan-mar"]


def distinct_expressions(n: int) -> list[str]:
    """N different 5- and 6-field expressions (ranges, steps, lists, names, DOM and DOW)."""
    out: dict[str, None] = {}
    i = 0
    while len(out) < n:
        minute, hour = i % 60, (i // 60) % 24
        dom = (i // 1440) % 28 + 1
        month = MONTHS[(i // 40320) % len(MONTHS)]
        if i % 7 == 0:
            expr = f"{(i // 7) % 60} {minute} {hour} {dom} {month} *"  # 6 fields: seconds first
        elif i % 5 == 0:
            expr = f"{minute} {hour} * {month} {'mon-fri' if i % 2 else '0,6'}"
        else:
            expr = f"{minute} {hour} {dom} {month} *"
        out.setdefault(expr)
        i += 1
    return list(out)


def clear_caches() -> None:
    from awa_tui.engine.cron import expression

    for value in vars(expression).values():
        clear = getattr(value, "cache_clear", None)
        if callable(clear):
            clear()


def engine_cost(exprs: list[str], zone: str, now: datetime) -> float:
    """Microseconds per expression: parse (compile) + next + latest, caches cleared first."""
    from awa_tui.engine.cron.expression import compile_cron

    clear_caches()
    began = time.perf_counter()
    for expr in exprs:
        cron = compile_cron(expr, zone)  # validates the expression and zone
        cron.next_after(now)
        cron.latest_at_or_before(now)
    return (time.perf_counter() - began) / len(exprs) * 1e6


def naive_croniter_cost(exprs: list[str], now: datetime) -> float:
    sample = exprs[:SAMPLE_NAIVE]
    naive_now = now.replace(tzinfo=None)
    began = time.perf_counter()
    for expr in sample:
        fields = expr.split()
        croniter(expr, naive_now, second_at_beginning=len(fields) == 6).get_next(datetime)
    return (time.perf_counter() - began) / len(sample) * 1e6


SEED_DISTINCT_SQL = """
INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, last_enqueued_at)
SELECT 'distinct-' || lpad(o::text, 6, '0'), e, 'America/New_York', 'tick', 'cronq', now()
FROM unnest(%s::text[]) WITH ORDINALITY AS x(e, o)
"""


def first_pass(server: Server, exprs: list[str]) -> float:
    from awa_tui.engine import migrations
    from awa_tui.engine.firing import evaluator

    with server.database(f"cron_{len(exprs)}") as dsn:
        migrations.migrate(dsn)
        with connect(dsn) as conn:
            conn.execute(SEED_DISTINCT_SQL, (exprs,))
            conn.execute("ANALYZE awa.cron_jobs")
            clear_caches()
            began = time.perf_counter()
            evaluator.evaluate(conn)
            return time.perf_counter() - began


def run(server: Server, sizes: list[int], report: Report) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    for n in sizes:
        exprs = distinct_expressions(n)
        assert len(set(exprs)) == n
        utc = engine_cost(exprs, "UTC", now)
        zoned = engine_cost(exprs, "America/New_York", now)
        naive = naive_croniter_cost(exprs, now)
        size = f"{n:,} distinct"
        report.add(Row("cron math", size, "parse+next+latest, UTC", "", utc, "µs"))
        report.add(Row("cron math", size, "parse+next+latest, New York", "", zoned, "µs"))
        report.add(Row("cron math", size, "total for all, New York", "", zoned * n / 1e6, "s"))
        report.add(Row("cron math", f"{min(n, SAMPLE_NAIVE):,} sample", "naive croniter get_next (old)", "", naive,
                       "µs"))
        report.add(Row("cron math", size, "first evaluator pass (hints)", "", first_pass(server, exprs), "s"))
