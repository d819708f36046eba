"""S38: `owner list|retire|restore`, `plan [--owner]`, `cron retire|restore|adopt|transfer`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from reconcile_helpers import declare, owned
from typer.testing import CliRunner

from awa_tui.cli import app, core, cron, owners, queue  # noqa: F401  (register the commands)

runner = CliRunner(env={"COLUMNS": "200"})


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str):
    code, stdout, stderr = run(*args, "--json")
    assert code == 0, stderr
    return json.loads(stdout)


@pytest.fixture
def billing(dsn, client):
    """billing declares invoice (and used to have dunning); 'legacy' is unowned."""
    old = declare(dsn, "billing", ["invoice", "dunning"])
    old.sync()
    old.close()
    new = declare(dsn, "billing", ["invoice"], grace=timedelta(minutes=10))
    new.runtime.publish()
    client.periodic("legacy", "0 * * * *", "test.job")
    client.sync()
    yield new
    new.close()


def test_owner_list_json_and_table(dsn, billing):
    (summary,) = run_json("owner", "list", "--dsn", dsn)
    assert summary["owner"] == "billing" and summary["fresh_runtimes"] == 1
    assert summary["schedules_owned"] == 2 and summary["blockers"][0]["code"] == "grace_remaining"
    code, stdout, _ = run("owner", "list", "--dsn", dsn)
    assert code == 0 and "billing" in stdout and "grace_remaining" in stdout


def test_plan_json_and_text(dsn, billing):
    (plan,) = run_json("plan", "--dsn", dsn, "--owner", "billing")
    assert plan["retirements"] == ["dunning"] and not plan["will_retire"]
    code, stdout, _ = run("plan", "--dsn", dsn)
    assert code == 0
    assert "retire (blocked): dunning" in stdout and "blocked [grace_remaining]" in stdout


def test_cron_lifecycle_commands_record_the_operator(dsn, conn, billing):
    assert run_json("cron", "adopt", "legacy", "billing", "--dsn", dsn, "--operator", "ann")["owner"] == "billing"
    assert run_json("cron", "transfer", "legacy", "payments", "--dsn", dsn, "--operator", "ann")["owner"] == "payments"
    code, stdout, _ = run("cron", "retire", "legacy", "--dsn", dsn, "--operator", "ann")
    assert (code, stdout.strip()) == (0, "retired legacy")
    assert run_json("cron", "restore", "legacy", "--dsn", dsn, "--operator", "ann")["retired_at"] is None
    operators = {r["operator"] for r in conn.execute(
        "SELECT operator FROM awa.audit_log WHERE target = 'legacy'").fetchall()}
    assert operators == {"ann"}


def test_owner_retire_and_restore(dsn, conn, billing):
    result = run_json("owner", "retire", "billing", "--dsn", dsn, "--operator", "ann")
    assert result["names"] == ["dunning", "invoice"]
    assert owned(conn)["invoice"] == ("billing", True)
    code, stdout, _ = run("owner", "restore", "billing", "--dsn", dsn)
    assert code == 0 and stdout.startswith("restored 2 schedule(s) of owner billing")


@pytest.mark.parametrize(("args", "message"), [
    (("owner", "retire", "ghost"), "error: owner 'ghost' has no schedules"),
    (("plan", "--owner", "ghost"), "error: unknown owner 'ghost'"),
    (("cron", "transfer", "legacy", "billing"), "error: schedule 'legacy' is unowned; use adopt"),
    (("cron", "restore", "legacy"), "error: schedule 'legacy' is not retired"),
    (("cron", "adopt", "nope", "billing"), "error: unknown schedule 'nope'"),
])
def test_errors_are_one_line_with_non_zero_exit(dsn, billing, args, message):
    code, stdout, stderr = run(*args, "--dsn", dsn)
    assert code != 0 and stdout == ""
    assert stderr.splitlines() == [stderr.strip()] and stderr.startswith(message)


def test_the_installed_command_exits_non_zero_with_one_line(dsn, billing):
    result = subprocess.run(
        [sys.executable, "-m", "awa_tui", "cron", "restore", "invoice", "--dsn", dsn],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.strip() == "error: schedule 'invoice' is not retired"
