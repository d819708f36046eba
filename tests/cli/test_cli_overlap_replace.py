"""S74 through the real executable: `cron create/edit --overlap replace`, `cron list/show`
(and --json) and `cron why --at` after a fire that replaced a job; a bad policy is one line."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from cli_helpers import awa, awa_json, one_line_error, table

from awa_tui import Client


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_create_show_list_edit_and_why_of_a_replace_schedule(
    dsn: str, conn: psycopg.Connection[Any], client: Client
) -> None:
    created = awa("cron", "create", "rep", "--cron", "* * * * *", "--kind", "k", "--overlap", "replace",
                  "--dsn", dsn, "--operator", "alice@ops")
    assert (created.returncode, created.stderr) == (0, "")
    assert awa_json("cron", "list", "--dsn", dsn)[0]["overlap"] == "replace"
    shown = awa("cron", "show", "rep", "--dsn", dsn).stdout.splitlines()
    assert [line.split() for line in shown if line.startswith("overlap ")] == [["overlap", "replace"]]
    # Two fires at instants of the test's own (the first one's job still waits at the second).
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.cron_jobs SET created_at = %s, last_enqueued_at = %s, next_fire_at = NULL "
                     "WHERE name = 'rep'", (_at("2025-01-01T00:00:00"), _at("2025-01-01T00:00:00")))
    [first] = client.evaluate(now=_at("2025-01-01T00:01:00")).jobs
    [second] = client.evaluate(now=_at("2025-01-01T00:02:00")).jobs
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute("UPDATE awa.jobs SET created_at = (metadata ->> 'cron_fire_time')::timestamptz "
                     "+ interval '1 second'")
    why = awa("cron", "why", "rep", "--at", "2025-01-01T00:02:00Z", "--dsn", dsn)
    assert (why.returncode, why.stderr, why.stdout) == (0, "", (
        f"rep: due instant 2025-01-01T00:02:00Z: fired (job {second.id}, 1s late), waiting to run; it replaced "
        f"job {first.id}, still waiting or running at this instant (the overlap policy replace).\n"))
    answer = awa_json("cron", "why", "rep", "--at", "2025-01-01T00:01:00Z", "--dsn", dsn)
    assert (answer["verdict"]["result"], answer["verdict"]["replaced_by"], answer["verdict"]["replaced"]) == (
        "cancelled", second.id, [])
    assert answer["text"] == (f"rep: due instant 2025-01-01T00:01:00Z: fired (job {first.id}, 1s late), "
                              f"cancelled: replaced by job {second.id}.")
    fires = table(awa("cron", "show", "rep", "--dsn", dsn).stdout.split("recent fires", 1)[1])
    assert [(r["ID"], r["STATE"], r["REPLACE"]) for r in fires] == [
        (str(second.id), "available", f"replaced job {first.id}"),
        (str(first.id), "cancelled", f"replaced by job {second.id}"),
    ]
    recent = awa_json("cron", "show", "rep", "--dsn", dsn)["recent_fires"]
    assert [(f["id"], f["replaced"], f["replaced_by"]) for f in recent] == [
        (second.id, [first.id], None), (first.id, [], second.id)]
    # A change of the policy is audited as a redefinition, before and after.
    edited = awa("cron", "edit", "rep", "--overlap", "skip", "--dsn", dsn, "--operator", "bob@ops")
    assert (edited.returncode, edited.stderr) == (0, "")
    audit = conn.execute("SELECT before, after FROM awa.audit_log WHERE target = 'rep' AND action = 'redefine' "
                         "AND operator = 'bob@ops' AND before ? 'overlap'").fetchall()
    assert [(r["before"]["overlap"], r["after"]["overlap"]) for r in audit] == [("replace", "skip")]


def test_a_bad_overlap_policy_is_one_line(dsn: str, conn: psycopg.Connection[Any]) -> None:
    result = awa("cron", "create", "rep", "--cron", "* * * * *", "--kind", "k", "--overlap", "replaces",
                 "--dsn", dsn)
    assert one_line_error(result) == (
        "error: overlap: must be 'allow', 'skip', 'buffer_one' or 'replace', got 'replaces'")
    assert result.returncode == 1  # as every command's refusal
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0


def test_list_shows_every_policy(dsn: str, client: Client) -> None:
    for policy in ("allow", "skip", "buffer_one", "replace"):
        client.periodic(f"p-{policy}", "0 * * * *", "k", overlap=policy)
    client.sync()
    assert {r["name"]: r["overlap"] for r in awa_json("cron", "list", "--dsn", dsn)} == {
        "p-allow": "allow", "p-skip": "skip", "p-buffer_one": "buffer_one", "p-replace": "replace"}
    assert [r["NAME"] for r in table(awa("cron", "list", "--dsn", dsn).stdout)] == [
        "p-allow", "p-buffer_one", "p-replace", "p-skip"]
