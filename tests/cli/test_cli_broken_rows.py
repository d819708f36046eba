"""S15 through the real executable: with poison rows in the table, `cron list`, `show` and
`next` keep working; a BROKEN row says why, in one line, with no raw control byte."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from cli_helpers import awa, awa_json, awa_many, one_line_error, table
from poison_seed import HEALTHY, JOBS_TARGET, POISON, broken, seed


def test_cron_list_shows_broken_rows_with_their_reason(dsn: str, conn: psycopg.Connection[Any]) -> None:
    huge = seed(conn)
    expected = broken()
    rows = awa_json("cron", "list", "--dsn", dsn)
    assert sorted(r["name"] for r in rows) == sorted([*HEALTHY, JOBS_TARGET, *POISON, huge])
    assert {r["name"]: r["fault"] for r in rows if r["fault"]} == expected

    text = awa("cron", "list", "--dsn", dsn)
    assert (text.returncode, text.stderr) == (0, "")
    # The reasons are escaped (repr); the raw columns beside them are the console-safety
    # work of common.fmt, not checked here.
    assert all("\x1b" not in fault for fault in expected.values())
    states = {row["NAME"]: row["STATE"] for row in table(text.stdout)}
    assert states["p-last-inf"] == f"BROKEN: {expected['p-last-inf']}"
    assert expected["p-last-inf"] == ("last_enqueued_at infinity is outside the supported range "
                                      "0001-01-03..9999-12-29 UTC")
    assert states["p-policy-escape"] == "BROKEN: missed_fire_policy: unknown policy '\\x1b[2Jwhenever'"
    assert states["p-paused-inf"] == ("BROKEN: paused_at infinity is outside the supported range "
                                      "0001-01-03..9999-12-29 UTC; PAUSED by  since -")
    assert states["a-healthy"] == "active"


def test_cron_show_and_next_of_every_row(dsn: str, conn: psycopg.Connection[Any]) -> None:
    huge = seed(conn)
    expected = broken()
    names = [*POISON, huge, *HEALTHY, JOBS_TARGET]
    shown = awa_many([["cron", "show", name, "--json", "--dsn", dsn] for name in names])
    for name, result in zip(names, shown, strict=True):
        assert (result.returncode, result.stderr) == (0, ""), name
        assert json.loads(result.stdout)["fault"] == expected.get(name), name
    nexts = awa_many([["cron", "next", name, "--dsn", dsn] for name in names])
    for name, result in zip(names, nexts, strict=True):
        if name in expected:
            assert one_line_error(result) == f"error: {expected[name]}", name
        else:
            assert (result.returncode, result.stderr) == (0, ""), name
    text = awa("cron", "show", "p-meta-null", "--dsn", dsn)
    status = [line for line in text.stdout.splitlines() if line.startswith("status")]
    assert status == ["status                   BROKEN: metadata: must be a JSON object, got a JSON null"]
