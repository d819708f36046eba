"""Terminal escape injection through the CLI and the runtime log: database strings with
control bytes reach the real `awa-tui` process, and the raw bytes it writes obey none of
them, show each one visibly, and never read them as Rich markup or emoji codes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_helpers import COMMAND, cli_env
from helpers import wait_for
from terminal_app import KIND
from terminal_payload import PAYLOAD, SHOWN, assert_obeys_nothing, seed

HERE = Path(__file__).resolve().parent


def run(*args: str) -> tuple[int, bytes, bytes]:
    result = subprocess.run([*COMMAND, *args], capture_output=True, env=cli_env(), timeout=60,
                            stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout, result.stderr


def clean_output(*args: str) -> str:
    code, out, err = run(*args)
    assert code == 0, err
    assert_obeys_nothing(err)
    assert err == b""
    return assert_obeys_nothing(out)


def shown(prefix: str, tag: str) -> str:
    return f"{prefix}{tag}{SHOWN}"


def test_cron_list_and_show_escape_every_schedule_field(dsn: str, conn: Any) -> None:
    s = seed(conn)
    tag = s.paused[1:7]
    listing = clean_output("cron", "list", "--dsn", dsn)
    for text in (shown("p", tag), shown("r", tag), shown("k", tag), shown("q", tag), shown("o", tag),
                 f"PAUSED by {shown('by', tag)} since", f"RETIRED by {shown('rb', tag)}",
                 "[queue paused]"):
        assert text in listing, text
    assert "🔥" not in listing and "[bold]b[/bold]" in listing  # neither emoji code nor markup

    detail = clean_output("cron", "show", s.paused, "--dsn", dsn)
    lines = detail.splitlines()
    for label, value in (("name", shown("p", tag)), ("kind", shown("k", tag)), ("queue", shown("q", tag)),
                         ("paused by", shown("by", tag)), ("owner", shown("o", tag)),
                         ("queue paused by", shown("qb", tag))):
        assert f"{label:24} {value}" in lines, label
    # Lists and JSON columns print as JSON, which escapes on its own: kept as it was.
    assert f"{'tags':24} {json.dumps([f't{tag}{PAYLOAD}', 'plain'])}" in lines
    assert f"{'status':24} PAUSED by {shown('by', tag)} since" in detail


def test_audit_runtime_queue_and_owner_listings_escape_every_field(dsn: str, conn: Any) -> None:
    s = seed(conn)
    tag = s.paused[1:7]
    audit = clean_output("audit", "--dsn", dsn)
    for text in (shown("op", tag), shown("act", tag), shown("p", tag)):
        assert text in audit, text
    assert json.dumps({"paused_by": f"by{tag}{PAYLOAD}"}) in audit

    runtimes = clean_output("runtime", "list", "--dsn", dsn)
    for text in (shown("host", tag), shown("v", tag), shown("o", tag), shown("hash", tag)):
        assert text in runtimes, text

    queues = clean_output("queue", "list", "--dsn", dsn)
    assert shown("q", tag) in queues and shown("qb", tag) in queues

    owners = clean_output("owner", "list", "--dsn", dsn)
    assert shown("o", tag) in owners
    plan = clean_output("plan", "--dsn", dsn)
    assert f"owner {shown('o', tag)}:" in plan


def test_already_paused_errors_are_one_escaped_line(dsn: str, conn: Any) -> None:
    s = seed(conn)
    tag = s.paused[1:7]
    for args, expected in (
        (("cron", "pause", s.paused),
         f"error: schedule 'p{tag}{SHOWN}' is already paused (by {shown('by', tag)})"),
        (("queue", "pause", s.queue),
         f"error: queue 'q{tag}{SHOWN}' is already paused (by {shown('qb', tag)})"),
    ):
        code, out, err = run(*args, "--dsn", dsn, "--operator", "sec@test")
        assert code == 1 and out == b""
        assert assert_obeys_nothing(err) == expected + "\n"


def test_runtime_log_lines_are_single_and_escaped(dsn: str, conn: Any, tmp_path: Path) -> None:
    """`awa-tui run` fires a schedule whose name and kind are hostile, its job fails with a
    hostile error (the fire, the failure and the job's state are logged), and it skips a
    schedule whose name and cron text are hostile (the evaluator logs it)."""
    tag = uuid.uuid4().hex[:6]
    conn.execute("SET session_replication_role = replica")  # rows from before the v004 guards
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, args) VALUES (%s, '* * * * * *', 'UTC', %s, %s)",
        (f"fire{tag}{PAYLOAD}", KIND, json.dumps({"error": f"err{tag}{PAYLOAD}"})),
    )
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind) VALUES (%s, %s, 'UTC', 'x')",
        (f"bad{tag}{PAYLOAD}", f"* * *{PAYLOAD}"),
    )
    conn.execute("RESET session_replication_role")
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env["PYTHONPATH"]])
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([*COMMAND, "run", "--app", "terminal_app:setup", "--dsn", dsn],
                                   stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: b") retryable" in log_path.read_bytes() and f"bad{tag}".encode() in log_path.read_bytes(),
                     timeout=30, what="a failed job and a skipped schedule in the log")
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
    lines = assert_obeys_nothing(log_path.read_bytes()).splitlines()
    kind = f"sec.kind{SHOWN}"

    def matching(text: str) -> list[str]:
        return [line for line in lines if text in line]

    # Each record is one line holding the whole escaped value (a newline in it forged none).
    fired = matching(f"fired fire{tag}")
    fire_line = rf"\S+ \S+ INFO awa_tui\.fires: fired fire{tag}{re.escape(SHOWN)} @ \S+ -> job \d+"
    assert fired and all(re.fullmatch(fire_line, line) for line in fired)
    failed = matching(" failed: RuntimeError: ")
    # The traceback follows on the same line, its newlines escaped.
    assert failed and all(
        re.fullmatch(rf"\S+ \S+ WARNING awa_tui\.worker: job \d+ \({re.escape(kind)}\) in queue \S+, attempt \d+ of "
                     rf"\d+, failed: RuntimeError: err{tag}{re.escape(SHOWN)}(\\n.*)?", line) for line in failed)
    states = matching(") retryable")
    assert states and all(re.fullmatch(rf"\S+ \S+ INFO awa_tui\.worker: job \d+ \({re.escape(kind)}\) retryable", line)
                          for line in states)
    skipped = matching(f"bad{tag}")
    assert skipped and all(f"ERROR awa_tui.evaluator: schedule 'bad{tag}{SHOWN}' skipped: cron_expr: " in line
                           for line in skipped)
