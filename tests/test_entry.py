"""The `awa-tui` command's ending (awa_tui/entry.py): a finished one-shot command ends at once,
its output whole and its exit status kept, without the interpreter's teardown; a process
that loaded an app's code, or still runs a thread that is not a daemon, ends the usual way
so the app's exit handlers and that thread finish."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from awa_tui import Client

# A probe around entry.main: when the command ends through the usual SystemExit the probe
# sees it ("usual ending"); an ending without teardown never returns to it. An exit handler
# the probe registers itself writes MARK: the teardown ran it, an immediate ending did not.
PROBE = """
import atexit, sys, threading
from pathlib import Path
mark = Path(sys.argv[1])
atexit.register(lambda: mark.write_text("exit handler ran"))
setup = sys.argv[2]
gate = threading.Event()
if setup == "app":
    from awa_tui import bootstrap
    bootstrap.load_app("json:dumps")  # any callable stands for the app's setup
elif setup == "thread":
    threading.Thread(target=gate.wait).start()  # not a daemon: the interpreter waits for it
sys.argv = ["awa-tui", *sys.argv[3:]]
from awa_tui.entry import main
try:
    main()
except SystemExit as done:
    print("usual ending", done.code, flush=True)
    gate.set()
    raise
"""


def _probe(tmp_path: Path, setup: str, *argv: str) -> tuple[subprocess.CompletedProcess[str], str | None]:
    mark = tmp_path / f"mark-{setup}"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(mark), setup, *argv],
                          capture_output=True, text=True, timeout=60)
    return proc, mark.read_text() if mark.exists() else None


def test_a_finished_command_ends_at_once_with_its_whole_output_and_status(
        tmp_path: Path, dsn: str, client: Client) -> None:
    client.periodic("nightly", "0 3 * * *", "test.job")
    client.sync()
    proc, mark = _probe(tmp_path, "none", "cron", "show", "nightly", "--dsn", dsn)
    assert (proc.returncode, mark, "usual ending" in proc.stdout) == (0, None, False)
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["name", "nightly"]
    assert lines[-2:] == ["ID  STATE  FIRE TIME  CREATED  MANUAL", "--  -----  ---------  -------  ------"]
    refused, mark = _probe(tmp_path, "none", "cron", "show", "nope", "--dsn", dsn)
    assert (refused.returncode, refused.stdout, refused.stderr, mark) == (
        1, "", "error: unknown schedule 'nope'\n", None)


def test_an_app_loaded_ends_the_usual_way_and_its_exit_handlers_run(tmp_path: Path) -> None:
    proc, mark = _probe(tmp_path, "app", "--version")
    assert (proc.returncode, mark) == (0, "exit handler ran")
    assert proc.stdout.splitlines()[-1] == "usual ending 0"


def test_a_thread_still_running_ends_the_usual_way(tmp_path: Path) -> None:
    proc, mark = _probe(tmp_path, "thread", "--version")
    assert (proc.returncode, mark) == (0, "exit handler ran")
    assert proc.stdout.splitlines()[-1] == "usual ending 0"
