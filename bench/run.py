"""The one entry point: `python -m bench.run [--full | --scale] [--compare] [--only NAME ...] [--sizes N ...]`.

Starts (or reuses) an embedded PostgreSQL 18 under bench/.pg with default durability
(fsync, synchronous_commit and full_page_writes on) unless AWA_BENCH_DATABASE_URL names a
server, runs every scenario at quick sizes (or the full sizes with --full), prints
one table and writes it as JSON to bench/results/. With --save-reference the JSON is also
kept as the committed reference (bench/results/reference.json and bench/RESULTS.md; with
--scale, reference-scale.json and RESULTS-scale.md).
--scale runs the fleet-size scenarios at 10k, 100k and 1M instead and adds three
tables: the 1M targets, the cost curve (each figure at every size) and the CLI at 1M.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench import results_md
from bench.common import (
    RESULTS_DIR,
    LoadSampler,
    Report,
    Row,
    Server,
    curve,
    fmt,
    machine_info,
    size_of,
    start_server,
)
from bench.engines import Engine, Ours, Upstream
from bench.scenarios import (
    alert_outage,
    calendar_mix,
    cli_latency,
    console,
    cron_math,
    drain,
    failover,
    fire_on_time,
    fresh_start,
    idle,
    overlap,
    per_second,
    retention_soak,
    saturation,
    scale,
    sync,
)

# Sizes per scenario: quick (the default, minutes in all) and full (the 100k targets).
QUICK = {
    "cron_math": [10000],
    "sync": [10000],
    "idle": [10000],
    "fire_on_time": [1000, 10000],
    "per_second": [1000],
    "failover": [100],
    "console": [10000],
    "cli_latency": [10000],
    "overlap": [10000],
    "fresh_start": [10000],
    "calendar_mix": [10000],
    "alert_outage": [1000],
    "drain": [20000],
    "retention_soak": [200],
}
FULL = {
    "cron_math": [100000],
    "sync": [100000],
    "idle": [100000],
    "fire_on_time": [10000, 100000],
    "per_second": [10000],
    "failover": [1000],
    "console": [100000],
    "cli_latency": [100000],
    "overlap": [10000, 100000],
    "fresh_start": [100000],
    "calendar_mix": [100000],
    "alert_outage": [10000],
    "drain": [1000000],
    "retention_soak": [200],
}
# --scale: each figure at 10k, 100k and 1M, so the cost curve shows. The
# smaller sizes run the same code on smaller fleets; the 1M targets are judged on 1M.
SCALE_SIZES = [10000, 100000, 1000000]
SCALE = {
    "sync": SCALE_SIZES,
    "fresh_start": SCALE_SIZES,
    "scale": SCALE_SIZES,
    "console": SCALE_SIZES,
    "cli_latency": SCALE_SIZES,
}
# Side-by-side sizes: the same scenarios against awa-pg.
COMPARE = {
    "sync": [10000],
    "idle": [10000],
    "fire_on_time": [1000, 10000, 50000],
    "per_second": [100, 1000, 10000],
}
# Run only when named (`--only saturation`): ~5 minutes, a measurement, not a target.
ON_REQUEST = {"saturation": [1000, 2000, 5000, 10000, 20000, 40000]}
PER_SECOND_WINDOW = {"quick": 20, "full": 60, "scale": 60}
FAILOVER_REPEATS = {"quick": 2, "full": 5, "scale": 2}
# The drain's worker concurrency (a fresh backlog each); 50 only where the backlog is small.
DRAIN_CONCURRENCY = {"quick": (10, 50), "full": (10,), "scale": (10,)}
# The retention soak: how long it runs and the horizon it prunes at (seconds).
SOAK_SECONDS = {"quick": 150, "full": 540, "scale": 540}
SOAK_HORIZON_S = {"quick": 30, "full": 60, "scale": 60}

Scenario = Callable[[Server, Engine, list[int], Report, Engine | None], None]


def scenarios(mode: str) -> dict[str, Scenario]:
    window_s, repeats = PER_SECOND_WINDOW[mode], FAILOVER_REPEATS[mode]
    drain_c, soak_s, horizon_s = DRAIN_CONCURRENCY[mode], SOAK_SECONDS[mode], SOAK_HORIZON_S[mode]
    return {
        "cron_math": lambda s, e, sizes, r, u: cron_math.run(s, sizes, r),
        "sync": sync.run,
        "idle": idle.run,
        "fire_on_time": fire_on_time.run,
        "per_second": lambda s, e, sizes, r, u: per_second.run(s, e, sizes, r, u, window_s),
        "failover": lambda s, e, sizes, r, u: failover.run(s, sizes, r, repeats),
        "console": lambda s, e, sizes, r, u: console.run(s, sizes, r),
        "cli_latency": lambda s, e, sizes, r, u: cli_latency.run(s, sizes, r),
        "overlap": overlap.run,
        "fresh_start": fresh_start.run,
        "scale": scale.run,
        "calendar_mix": calendar_mix.run,
        "alert_outage": lambda s, e, sizes, r, u: alert_outage.run(s, e, sizes, r, u, window_s),
        "saturation": saturation.run,
        "drain": lambda s, e, sizes, r, u: drain.run(s, sizes, r, drain_c),
        "retention_soak": lambda s, e, sizes, r, u: retention_soak.run(s, sizes, r, soak_s, horizon_s),
    }


def print_table(report: Report, compare: bool) -> None:
    headers = ["scenario", "size", "metric", "target", "awa-tui", "pass"]
    if compare:
        headers += ["awa-pg", "ratio (x better)"]
    lines = []
    for r in report.rows:
        cells = [r.scenario, r.size, r.metric, r.target or "", fmt(r.ours, r.unit),
                 {True: "PASS", False: "FAIL", None: ""}[r.passed]]
        if compare:
            ratio = r.ratio
            cells += [fmt(r.upstream, r.unit), f"{ratio:.1f}x" if ratio is not None else ""]
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for cells in lines:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
    for note in report.notes:
        print(f"note: {note}")


def print_cells(title: str, headers: list[str], lines: list[list[str]]) -> None:
    print(f"\n{title}")
    widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for cells in lines:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))


def scale_tables(report: Report, run_sizes: list[int] = SCALE_SIZES) -> dict[str, object]:
    """The --scale tables: the 1M targets, the cost curve, the CLI at 1M; printed
    here and returned for the JSON (bench/results_md.py renders them the same way).
    A run without 1M (`--sizes`) has no 1M tables: only its curve."""
    top = SCALE_SIZES[-1]
    targets = scale.targets_1m(report.rows) if top in run_sizes else []
    if targets:
        print_cells("1M targets", ["target", "limit", "measured", "pass", "figure"], [
            [t["target"], t["limit"], fmt(t["value"], t["unit"]), "PASS" if t["passed"] else "FAIL", t["source"]]
            for t in targets])
    else:
        print(f"\n1M targets: not judged (--sizes {' '.join(map(str, run_sizes))} has no {top:,})")
    lines = curve(report.rows, run_sizes)
    sizes = [str(n) for n in run_sizes]
    print_cells("Cost curve", ["scenario", "metric", *(f"{n:,}" for n in run_sizes)], [
        [c["scenario"] + (f" ({c['size']})" if c["size"] else ""), c["metric"],
         *(fmt(c["values"].get(n), c["unit"]) for n in sizes)] for c in lines])
    if top in run_sizes:
        cli = [r for r in report.rows if r.scenario == "cli_latency" and size_of(r.size)[0] == top]
        print_cells(f"CLI latency at {top:,}", ["command", "target", "measured", "pass"], [
            [r.metric, r.target, fmt(r.ours, r.unit), {True: "PASS", False: "FAIL", None: ""}[r.passed]]
            for r in cli])
    return {"targets_1m": targets, "curve": lines, "curve_sizes": run_sizes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    sizes_group = parser.add_mutually_exclusive_group()
    sizes_group.add_argument("--full", action="store_true", help="the full sizes (100k; tens of minutes)")
    sizes_group.add_argument("--scale", action="store_true",
                             help="the fleet-size scenarios at 10k, 100k and 1M, the 1M targets and "
                                  "the cost curve (about 20 minutes on a quiet 2-core machine)")
    parser.add_argument("--compare", action="store_true", help="also run awa-pg side by side (its own venv)")
    parser.add_argument("--only", nargs="*", default=None, help="scenarios to run (default: all)")
    parser.add_argument("--sizes", nargs="+", type=int, default=None, metavar="N",
                        help="run every scenario at these sizes instead of the mode's (e.g. "
                             "--scale --only scale --sizes 10000 100000: the scale tier below 1M)")
    parser.add_argument("--forward-other-kind", action="store_true",
                        help="install a forward (awa-tui forward procrastinate) of a kind no schedule has: "
                             "what the trigger costs the jobs it does not forward")
    parser.add_argument("--keep-server", action="store_true", help="leave the embedded server running")
    parser.add_argument("--out", type=Path, default=None, help="JSON output file")
    parser.add_argument("--save-reference", action="store_true",
                        help="also keep the JSON as the committed reference (bench/results/reference.json and "
                             "bench/RESULTS.md; with --scale reference-scale.json and RESULTS-scale.md); a whole "
                             "run only (no --only)")
    args = parser.parse_args(argv)
    if args.save_reference and (args.only is not None or args.sizes is not None):
        parser.error("--save-reference records a whole run: drop --only and --sizes")
    if args.sizes is not None and min(args.sizes) < 1:
        parser.error(f"--sizes: each size is a count of at least 1, got {min(args.sizes)}")
    if args.scale and args.compare:
        parser.error("--scale runs awa-tui alone: drop --compare")
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")

    mode = "scale" if args.scale else "full" if args.full else "quick"
    sizes = {"scale": SCALE, "full": FULL, "quick": QUICK}[mode] | ON_REQUEST
    names = args.only or [n for n in sizes if n not in ON_REQUEST]
    unknown = [n for n in names if n not in sizes]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {list(sizes)}")

    report = Report()
    upstream: Upstream | None = None
    if args.compare:
        upstream = Upstream()
        why = upstream.ensure_installed()
        if why:
            report.note(f"side-by-side skipped: {why}")
            upstream = None
        else:
            report.note(f"side by side with awa-pg {upstream.version()} (bench/.venv-awa-pg)")

    server = start_server()
    machine = machine_info(server)
    load = LoadSampler().start()
    report.note(f"server: {'embedded PG under bench/.pg' if server.started_here else 'AWA_BENCH_DATABASE_URL'}; "
                f"commit timestamps {'on' if server.commit_ts else 'off'}; "
                f"pg_stat_statements {'on' if server.stat_statements else 'off'}")
    began = time.monotonic()
    started = datetime.now(UTC)
    table = scenarios(mode)
    durations: dict[str, float] = {}  # seconds per scenario: what a time budget is spent on
    try:
        for name in names:
            ours_sizes = args.sizes or sizes[name]
            if upstream is not None and name in COMPARE:
                ours_sizes = sorted(set(ours_sizes) | set(COMPARE[name]))
            print(f"== {name} {ours_sizes}", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                ours = Ours(forward_other_kind=args.forward_other_kind)
                table[name](server, ours, ours_sizes, report, upstream if name in COMPARE else None)
            except Exception as exc:  # one broken scenario must not hide the others
                traceback.print_exc()
                report.add(Row(name, "-", "error", "", None, "", False, note=str(exc)[:200]))
            durations[name] = round(time.monotonic() - t0, 1)
            print(f"   {name} took {durations[name]:.0f} s", file=sys.stderr, flush=True)
    finally:
        load_summary = load.stop()
        if not args.keep_server:
            server.stop()

    print_table(report, compare=upstream is not None)
    extra = scale_tables(report, sorted(args.sizes or SCALE_SIZES)) if args.scale else {}
    print(f"load average (1 min) during the run: start {load_summary['start_1min']:.2f}, "
          f"mean {load_summary['mean_1min']:.2f}, max {load_summary['max_1min']:.2f} on {machine['nproc']} CPUs")
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    out = args.out or RESULTS_DIR / f"bench-{mode}{'-compare' if upstream else ''}-{stamp}.json"
    out.write_text(json.dumps({
        "mode": mode,
        "compare": upstream is not None,
        "started": stamp,
        "date": started.strftime("%Y-%m-%d %H:%M"),
        "args": sys.argv[1:] if argv is None else argv,
        "seconds": round(time.monotonic() - began, 1),
        "scenario_seconds": durations,
        "machine": machine,
        "load": load_summary,
        "notes": report.notes,
        "rows": report.as_json(),
        **extra,
    }, indent=2, default=str))
    print(f"results: {out}")
    if args.save_reference:
        json_path, md_path, _ = results_md.reference(mode)
        shutil.copyfile(out, json_path)
        results_md.write(json_path, md_path)
        print(f"reference: {json_path} and {md_path} (commit both)")
    missed = [r for r in report.rows if r.passed is False]
    missed += [t for t in extra.get("targets_1m", []) if not t["passed"]]  # type: ignore[attr-defined]
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
