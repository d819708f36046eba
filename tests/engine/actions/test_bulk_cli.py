"""The CLI's bulk forms through the real executable: names or --filter, --dry-run writing
nothing, adopt --declared-by, cron list --filter, one-line errors; the one-name forms
keep their single-action behaviour."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from bulk_helpers import audit_rows, footprint
from cli_helpers import awa, awa_json, one_line_error
from reconcile_helpers import declare

from awa_tui import Client


def test_pause_names_in_bulk_reports_skips(dsn: str, fleet: Client, conn: psycopg.Connection[Any]) -> None:
    data = awa_json("cron", "pause", "tick", "billing-report", "ghost", "tock", "--dsn", dsn, "--operator", "bob@ops")
    assert data == {
        "action": "pause", "done": ["tick", "tock"],
        "skipped": [{"name": "billing-report", "reason": "already paused (by alice@ops)"},
                    {"name": "ghost", "reason": "unknown schedule"}],
        "dry_run": False, "batches": 1, "owner": None, "job_ids": {},
        "counts": {"selected": 4, "done": 2, "skipped": 2},
    }
    assert audit_rows(conn, "bob@ops") == [("pause", "tick"), ("pause", "tock")]
    text = awa("cron", "resume", "tick", "tock", "sync-users", "--dsn", dsn, "--operator", "bob@ops")
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout.splitlines() == [
        "resumed 2 of 3 selected schedule(s) in 1 batch(es)",
        "  resumed tick",
        "  resumed tock",
        "  skipped sync-users: not paused",
    ]


def test_filter_selects_and_dry_run_writes_nothing(dsn: str, fleet: Client, conn: psycopg.Connection[Any]) -> None:
    before = footprint(conn)
    text = awa("cron", "retire", "--filter", "queue:q1 -retired", "--dry-run", "--dsn", dsn)
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout.splitlines() == [
        "dry run: would retire 3 of 3 selected schedule(s)",
        "  would retire bad-zone",
        "  would retire tick",
        "  would retire tock",
        "dry run: nothing changed",
    ]
    for verb in ("pause", "resume", "trigger", "restore"):
        data = awa_json("cron", verb, "--filter", "name:*", "--dry-run", "--dsn", dsn)
        assert (data["dry_run"], data["counts"]["selected"]) == (True, 7)
    assert awa_json("cron", "pause", "tick", "--dry-run", "--dsn", dsn)["done"] == ["tick"]
    assert footprint(conn) == before
    data = awa_json("cron", "trigger", "--filter", "owner:billing", "--dsn", dsn, "--operator", "bob@ops")
    assert (data["done"], sorted(data["job_ids"])) == (["billing-report", "nightly-billing"],
                                                      ["billing-report", "nightly-billing"])


def test_adopt_declared_by(dsn: str, fleet: Client, conn: psycopg.Connection[Any]) -> None:
    billing = declare(dsn, "billing", ["tick", "tock", "nightly-billing"])
    billing.sync()
    billing.runtime.publish()
    try:
        before = footprint(conn)
        text = awa("cron", "adopt", "--declared-by", "billing", "--dry-run", "--dsn", dsn)
        assert text.stdout.splitlines() == [
            "dry run: would adopt 2 of 2 selected schedule(s) to owner billing",
            "  would adopt tick", "  would adopt tock", "dry run: nothing changed"]
        assert footprint(conn) == before
        data = awa_json("cron", "adopt", "--declared-by", "billing", "--dsn", dsn, "--operator", "bob@ops")
        assert (data["owner"], data["done"], data["skipped"]) == ("billing", ["tick", "tock"], [])
        assert audit_rows(conn, "bob@ops") == [("adopt", "tick"), ("adopt", "tock")]
    finally:
        billing.close()


def test_list_filter_uses_the_grammar(dsn: str, fleet: Client) -> None:
    assert [r["name"] for r in awa_json("cron", "list", "--filter", "owner:billing -paused", "--dsn", dsn)] == [
        "nightly-billing"]
    assert [r["name"] for r in awa_json("cron", "list", "--filter", "BILL", "--dsn", dsn)] == [
        "billing-report", "nightly-billing"]  # a plain word: the substring filter it always was
    assert [r["name"] for r in awa_json("cron", "list", "--filter", "broken", "--dsn", dsn)] == ["bad-zone"]


def test_single_name_forms_are_unchanged(dsn: str, fleet: Client) -> None:
    assert one_line_error(awa("cron", "pause", "billing-report", "--dsn", dsn)) == (
        "error: schedule 'billing-report' is already paused (by alice@ops)")
    assert awa("cron", "pause", "tick", "--dsn", dsn).stdout == "paused tick\n"
    assert awa("cron", "retire", "tick", "--dsn", dsn).stdout == "retired tick\n"
    assert awa("cron", "restore", "tick", "--dsn", dsn).stdout == "restored tick\n"
    assert awa("cron", "adopt", "tock", "ops", "--dsn", dsn).stdout == "adopted tock for owner ops\n"
    assert awa_json("cron", "trigger", "tock", "--dsn", dsn)["kind"] == "tick"
    # resume NAME --dry-run is still the one schedule's resume preview (which refuses an
    # unpaused schedule), not a bulk dry run (which would report it skipped).
    assert one_line_error(awa("cron", "resume", "100%_off", "--dry-run", "--dsn", dsn)) == (
        "error: schedule '100%_off' is not paused")


@pytest.mark.parametrize(("argv", "message", "code"), [
    (("cron", "pause", "--filter", "colour:red"),
     "error: filter: unknown field 'colour' on schedules; fields are name, owner, state, queue, kind, policy, tz, "
     "tag, health, result, paused_by, overlap", 1),
    (("cron", "list", "--filter", 'name:"x'), "error: filter: unterminated quote in 'name:\"x'", 1),
    (("cron", "resume", "--filter", "state:asleep", "--dry-run"),
     "error: filter: state: unknown state 'asleep'; states are active, paused, retired, broken, finished", 1),
    (("cron", "trigger", "--filter", "\x1b[2J"),
     "error: filter: control characters are not allowed, got '\\x1b[2J'", 1),
    (("cron", "retire", "--filter", " "), "error: filter: empty; to select every schedule say so: name:*", 1),
    (("cron", "pause", "a", "--filter", "late"),
     "error: Give schedule names or --filter EXPR, not both. (see `awa-tui cron pause --help`)", 2),
    (("cron", "restore",), "error: Missing argument 'name' (or --filter EXPR). (see `awa-tui cron restore --help`)",
     2),
    (("cron", "adopt", "x"),
     "error: Missing argument 'owner' (or --declared-by OWNER). (see `awa-tui cron adopt --help`)", 2),
    (("cron", "adopt", "x", "--declared-by", "billing"),
     "error: Give NAME OWNER or --declared-by OWNER, not both. (see `awa-tui cron adopt --help`)", 2),
    (("cron", "adopt", "--declared-by", "nobody"),
     "error: owner 'nobody' has no fresh authoritative declaration: no running runtime declares its manifest", 1),
    (("cron", "pause", "tick", "tock", "--operator", "bad\tlabel"),
     "error: operator: a label of 1..200 printable characters is required, got 'bad\\tlabel'", 1),
])
def test_bad_input_is_one_line_and_writes_nothing(
    dsn: str, fleet: Client, conn: psycopg.Connection[Any], argv: tuple[str, ...], message: str, code: int
) -> None:
    before = footprint(conn)
    result = awa(*argv, "--dsn", dsn)
    assert (one_line_error(result), result.returncode) == (message, code)
    assert footprint(conn) == before
