"""Console against N schedules: first paint, UI-thread time per refresh, memory.

The console's own measurement script (tests/tui/perf_console.py, kept by the console's
authors beside its tests) builds the app with the CLI's factory, runs it headless with
`run_test()`, churns 2% of the schedules between refreshes, and reports JSON. We run it
in its own process so its RSS is the console's alone, against the bench server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import BENCH_DIR, Report, Row, Server, compile_bytecode

SCRIPT = BENCH_DIR.parent / "tests" / "tui" / "perf_console.py"
FIRST_PAINT_S = 1.0
REFRESH_MS = 100.0
RSS_MB = 300.0
TIMEOUT_S = 600


def run(server: Server, sizes: list[int], report: Report) -> None:
    if not SCRIPT.exists():
        report.add(Row("console", "-", "not measured", "", None, "", None, note=f"{SCRIPT} is missing"))
        return
    compile_bytecode()  # the console's modules are imported inside its first paint's clock
    for n in sizes:
        size = f"{n:,} schedules"
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "console.json"
            # tests/ on the path too: the script's helpers import the suite's own helpers.
            env = {**os.environ, "AWA_TEST_DATABASE_URL": server.admin_dsn}
            proc = subprocess.run([sys.executable, str(SCRIPT), "--schedules", str(n), "--json", str(out)],
                                  cwd=BENCH_DIR.parent, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
            if proc.returncode != 0 or not out.exists():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                report.add(Row("console", size, "error", "", None, "", False, note=tail[0][:200]))
                continue
            r = json.loads(out.read_text())
        paint, rss = r.get("first_paint_s"), r.get("rss_mb")
        stall = r.get("refresh_stall_ms_max", r.get("loop_stall_ms_max"))
        report.add(Row("console", size, "first paint", f"< {FIRST_PAINT_S:g} s", paint, "s",
                       paint is not None and paint < FIRST_PAINT_S))
        report.add(Row("console", size, "first paint, counts shown and idle", "", r.get("settled_s"), "s"))
        report.add(Row("console", size, "refresh handler p50", "", r.get("refresh_apply_ms_median"), "ms"))
        report.add(Row("console", size, "refresh handler max", "", r.get("refresh_apply_ms_max"), "ms"))
        report.add(Row("console", size, "UI stall per refresh p50", "", r.get("refresh_stall_ms_median"), "ms"))
        report.add(Row("console", size, "UI stall per refresh max", f"< {REFRESH_MS:g} ms", stall, "ms",
                       stall is not None and stall < REFRESH_MS))
        report.add(Row("console", size, "refresh fetch p50 (reader thread)", "", r.get("refresh_fetch_ms_median"),
                       "ms"))
        report.add(Row("console", size, "RSS", f"< {RSS_MB:g} MB", rss, "MB", rss is not None and rss < RSS_MB))
    report.note("console: tests/tui/perf_console.py in its own process (headless run_test, the console's "
                "page size, 2% of schedules change between refreshes); UI stall = longest event-loop block "
                "in each refresh (handler + layout + paint); awa_tui compiled to bytecode first, as an installed "
                "package is")
