"""What a forward (`awa-tui forward procrastinate`) costs the jobs it does NOT forward.

    AWA_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python -m bench.forward_overhead [--schedules 10000] [--rows 100000] [--rounds 7]

Two measures on a fresh database, each without and with a forward of another kind installed
(its BEFORE INSERT trigger on awa.jobs; its WHEN clause is false for every row here), the two
interleaved round by round so drift on a shared machine falls on both alike, each timed
after one untimed pass (the DDL of a toggle makes the plans over awa.jobs be made again):

- a fire pass: N per-minute schedules due at one instant, `evaluate(now)` wall time (the
  fire statement is unchanged; the trigger's WHEN is evaluated once per inserted job);
- a bare insert of R jobs into awa.jobs in one statement.

Prints the medians, the median of each round's difference, and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import timedelta

from bench.common import BENCH_KIND, connect, db_now, seed_schedules
from bench.worker_throughput import drop, scratch

OTHER_KIND = "forwarded.elsewhere"


def _toggle(dsn: str, on: bool) -> None:
    from awa_tui.engine.actions import forward

    script = forward.install_sql(forward.forward(OTHER_KIND, "some_task")) if on else forward.remove_sql(OTHER_KIND)
    with connect(dsn) as conn:
        conn.execute(script.removeprefix("BEGIN;\n").removesuffix("COMMIT;\n"))  # type: ignore[arg-type]


def _fire_pass(dsn: str, n: int, client: object, at: object) -> float:
    with connect(dsn) as conn:
        conn.execute("TRUNCATE awa.jobs, awa.fire_skips")
        conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = %s, next_fire_at = %s",
                     (at - timedelta(minutes=1), at))  # type: ignore[operator]
        conn.execute("VACUUM ANALYZE awa.cron_jobs")
    began = time.perf_counter()
    result = client.evaluate(now=at + timedelta(milliseconds=100))  # type: ignore[attr-defined, operator]
    seconds = time.perf_counter() - began
    if result.fired != n or result.errors:
        raise RuntimeError(f"pass fired {result.fired} of {n}: {result.errors}")
    return seconds


def _bare_insert(dsn: str, rows: int) -> float:
    with connect(dsn) as conn:
        conn.execute("TRUNCATE awa.jobs")
        began = time.perf_counter()
        conn.execute("INSERT INTO awa.jobs (kind, args) SELECT %s, jsonb_build_object('i', i) "
                     "FROM generate_series(1, %s) AS i", (BENCH_KIND, rows))
        return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=10000)
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    admin = os.environ.get("AWA_BENCH_DATABASE_URL")
    if not admin:
        raise SystemExit("set AWA_BENCH_DATABASE_URL to a server this bench may create databases on")
    from awa_tui import Client
    from awa_tui.engine.migrations import migrate

    name, dsn = scratch(admin)
    samples: dict[str, list[float]] = {k: [] for k in ("pass_off", "pass_on", "insert_off", "insert_on")}
    try:
        migrate(dsn)
        at = (db_now(dsn) + timedelta(hours=1)).replace(second=0, microsecond=0)
        seed_schedules(dsn, args.schedules, "0 * * * * *", "coalesce", at - timedelta(minutes=1))
        client = Client(dsn, operator="bench")
        _fire_pass(dsn, args.schedules, client, at)  # warm-up: caches, plans
        for i in range(args.rounds):
            for on in ((False, True) if i % 2 == 0 else (True, False)):
                _toggle(dsn, on)
                # DDL on awa.jobs makes every cached plan over it be planned again: one pass
                # after each toggle pays that (either way), so it is not timed.
                _fire_pass(dsn, args.schedules, client, at)
                suffix = "on" if on else "off"
                samples[f"pass_{suffix}"].append(_fire_pass(dsn, args.schedules, client, at))
                samples[f"insert_{suffix}"].append(_bare_insert(dsn, args.rows))
        client.close()
    finally:
        drop(admin, name)
    med = {k: statistics.median(v) for k, v in samples.items()}
    # Each round's with-minus-without: drift between rounds (other load on the machine)
    # cancels within a round, so this median is steadier than the difference of medians.
    paired = {k: statistics.median(on - off for on, off in zip(samples[f"{k}_on"], samples[f"{k}_off"], strict=True))
              for k in ("pass", "insert")}
    print(f"fire pass, {args.schedules:,} due: without {med['pass_off'] * 1000:.1f} ms, "
          f"with a forward of another kind {med['pass_on'] * 1000:.1f} ms "
          f"(paired median {paired['pass'] * 1000:+.1f} ms, {paired['pass'] / args.schedules * 1e6:+.2f} us a fire)")
    print(f"bare insert, {args.rows:,} jobs: without {med['insert_off'] * 1000:.1f} ms, "
          f"with {med['insert_on'] * 1000:.1f} ms "
          f"(paired median {paired['insert'] * 1000:+.1f} ms, {paired['insert'] / args.rows * 1e6:+.2f} us a job)")
    print(json.dumps({"bench": "forward_overhead", "schedules": args.schedules, "rows": args.rows,
                      "rounds": args.rounds, "median_s": med, "paired_median_s": paired,
                      "samples_s": {k: [round(x, 4) for x in v] for k, v in samples.items()}}))


if __name__ == "__main__":
    main()
