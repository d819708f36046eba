"""S15: a row that is invalid in the database is skipped with an error each pass, never
stopping the others."""

from __future__ import annotations

from typing import Any

from engine_helpers import at, fire_times

from awa_tui import Client


def _insert(conn: Any, name: str, cron_expr: str, timezone: str = "UTC", policy: str = "coalesce") -> None:
    conn.execute(
        "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, missed_fire_policy, created_at) "
        "VALUES (%s, %s, %s, 'k', %s, '2025-01-01T00:00:00Z')",
        (name, cron_expr, timezone, policy),
    )


def test_bad_rows_are_skipped_with_an_error_every_pass(client: Client, conn: Any) -> None:
    _insert(conn, "a-bad-cron", "every tuesday")
    _insert(conn, "b-bad-zone", "* * * * *", "Mars/Olympus_Mons")
    _insert(conn, "c-good", "* * * * *")
    _insert(conn, "d-seven-fields", "* * * * * * *")
    _insert(conn, "e-bad-policy", "* * * * *", policy="whenever")
    _insert(conn, "f-never", "0 0 30 2 *")  # February 30th
    for minute in (1, 2):
        result = client.evaluate(now=at(f"2025-01-01T00:0{minute}:00"))
        assert [(j.name, j.fire_time) for j in result.jobs] == [("c-good", f"2025-01-01T00:0{minute}:00Z")]
        errors = sorted(result.errors)
        assert [e.split("'")[1] for e in errors] == [
            "a-bad-cron", "b-bad-zone", "d-seven-fields", "e-bad-policy", "f-never",
        ]
        assert "cron_expr" in errors[0] and "'every tuesday'" in errors[0]
        assert "timezone" in errors[1] and "Mars/Olympus_Mons" in errors[1]
        assert "7 fields" in errors[2]
        assert "missed_fire_policy" in errors[3] and "whenever" in errors[3]
        assert "cron_expr" in errors[4] and "0 0 30 2 *" in errors[4]
    assert fire_times(conn, "c-good") == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]
    bad = conn.execute(
        "SELECT count(*) AS n FROM awa.cron_jobs WHERE name <> 'c-good' AND last_enqueued_at IS NOT NULL"
    ).fetchone()
    assert bad == {"n": 0}


def test_a_repaired_row_fires_again(client: Client, conn: Any) -> None:
    _insert(conn, "fixme", "not cron")
    assert len(client.evaluate(now=at("2025-01-01T00:01:00")).errors) == 1
    conn.execute("UPDATE awa.cron_jobs SET cron_expr = '* * * * *' WHERE name = 'fixme'")
    result = client.evaluate(now=at("2025-01-01T00:02:00"))
    assert (result.errors, [j.fire_time for j in result.jobs]) == ([], ["2025-01-01T00:02:00Z"])
