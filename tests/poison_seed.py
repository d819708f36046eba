"""Poison rows (S15): every column of awa.cron_jobs, and the job and runtime snapshot rows
the console reads, written by hand with extreme values their column types allow.

Each schedule row starts healthy (`* * * * *`, created 2025-01-01T00:00:00Z) and gets one
hand edit, written as psql or an older binary would (triggers off, as `force` does). The
tests that use these rows check that the healthy schedules keep firing and every view
renders; FAULTS says which rows must be BROKEN, and why, in the product's exact words.
"""

from __future__ import annotations

from typing import Any

import psycopg

RANGE = "is outside the supported range 0001-01-03..9999-12-29 UTC"
HUGE_NAME = "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 60) g)"  # 1920 chars

# name -> (SET clause of the hand edit, the exact BROKEN reason or None for a row that is
# odd but can fire). Names sort in the order the console lists them.
POISON: dict[str, tuple[str, str | None]] = {
    "p-last-inf": ("last_enqueued_at = 'infinity'", f"last_enqueued_at infinity {RANGE}"),
    "p-last-neg-inf": ("last_enqueued_at = '-infinity'", f"last_enqueued_at -infinity {RANGE}"),
    "p-last-bc": ("last_enqueued_at = '0044-03-15 00:00:00+00 BC'",
                  f"last_enqueued_at 0044-03-15 00:00:00+00 BC {RANGE}"),
    "p-last-9999": ("last_enqueued_at = '9999-12-31 23:59:59+00'",
                    f"last_enqueued_at 9999-12-31 23:59:59+00 {RANGE}"),
    "p-last-year1": ("last_enqueued_at = '0001-01-01 00:00:00+00'",
                     f"last_enqueued_at 0001-01-01 00:00:00+00 {RANGE}"),
    "p-next-neg-inf": ("next_fire_at = '-infinity'", f"next_fire_at -infinity {RANGE}"),
    "p-next-bc": ("next_fire_at = '4713-01-01 00:00:00+00 BC'", f"next_fire_at 4713-01-01 00:00:00+00 BC {RANGE}"),
    "p-next-inf": ("next_fire_at = 'infinity'", f"next_fire_at infinity {RANGE}"),
    "p-created-inf": ("created_at = 'infinity'", f"created_at infinity {RANGE}"),
    "p-created-bc": ("created_at = '0001-01-01 00:00:00+00 BC'", f"created_at 0001-01-01 00:00:00+00 BC {RANGE}"),
    "p-updated-neg-inf": ("updated_at = '-infinity'", f"updated_at -infinity {RANGE}"),
    "p-paused-inf": ("paused_at = 'infinity', paused_by = ''", f"paused_at infinity {RANGE}"),
    "p-retired-neg-inf": ("retired_at = '-infinity', retired_by = NULL", f"retired_at -infinity {RANGE}"),
    "p-args-null": ("args = 'null'", "args: must be a JSON object, got a JSON null"),
    "p-args-number": ("args = '5'", "args: must be a JSON object, got a JSON number"),
    "p-args-string": ("args = '\"s\"'", "args: must be a JSON object, got a JSON string"),
    "p-args-array": ("args = '[1, [2, {\"a\": []}]]'", "args: must be a JSON object, got a JSON array"),
    "p-args-nested": ("args = '{\"a\": {\"b\": [null, true, 1.5e300, \"\\u001b[2J\"]}}'", None),
    "p-args-bignum": ("args = ('{\"n\": 1' || repeat('0', 5000) || '}')::jsonb", None),
    "p-args-deep": ("args = (repeat('{\"a\": ', 3000) || '1' || repeat('}', 3000))::jsonb", None),
    "p-meta-null": ("metadata = 'null'", "metadata: must be a JSON object, got a JSON null"),
    "p-meta-array": ("metadata = '[]'", "metadata: must be a JSON object, got a JSON array"),
    "p-meta-bool": ("metadata = 'true'", "metadata: must be a JSON object, got a JSON boolean"),
    "p-prio-low": ("priority = -32768", "priority: must be an integer 1..4, got -32768"),
    "p-prio-high": ("priority = 32767", "priority: must be an integer 1..4, got 32767"),
    "p-attempts-zero": ("max_attempts = 0", "max_attempts: must be an integer 1..1000, got 0"),
    "p-attempts-high": ("max_attempts = 1001", "max_attempts: must be an integer 1..1000, got 1001"),
    "p-kind-empty": ("kind = ''", "kind: must be 1..200 characters, got 0"),
    "p-kind-huge": ("kind = repeat('k', 100000)", "kind: must be 1..200 characters, got 100000"),
    "p-queue-empty": ("queue = ''", "queue: must be 1..200 characters, got 0"),
    "p-tags-null": ("tags = ARRAY['ok', NULL]", "tags: must not hold NULL"),
    "p-tags-huge": ("tags = ARRAY[repeat('t', 100000), '\u202e', '']", None),
    "p-cron-empty": ("cron_expr = ''", "cron_expr: empty expression"),
    "p-cron-words": ("cron_expr = 'every tuesday'",
                     "cron_expr: 'every tuesday' has 2 fields; expected 5 (min hour dom month dow) "
                     "or 6 (sec min hour dom month dow)"),
    "p-cron-newline": ("cron_expr = E'* * * * *\\n'",
                       "cron_expr: must not contain newlines or control characters: '* * * * *\\n'"),
    "p-cron-huge": ("cron_expr = repeat('* ', 100000)",
                    # values are shown as repr cut to 60 characters
                    "cron_expr: at most 256 characters, got '" + "* " * 28 + "... (200000 characters)"),
    "p-cron-reboot": ("cron_expr = '@reboot'",
                      "cron_expr: unknown nickname '@reboot' (use one of @yearly, @annually, @monthly, "
                      "@weekly, @daily, @hourly)"),
    "p-zone-empty": ("timezone = ''", "timezone: unknown time zone ''"),
    "p-zone-mars": ("timezone = 'Mars/Olympus_Mons'", "timezone: unknown time zone 'Mars/Olympus_Mons'"),
    "p-zone-escape": ("timezone = E'UTC\\x1b[31m'", "timezone: unknown time zone 'UTC\\x1b[31m'"),
    "p-zone-huge": ("timezone = repeat('Z', 100000)",
                    "timezone: unknown time zone '" + "Z" * 56 + "..."),
    "p-policy-empty": ("missed_fire_policy = ''", "missed_fire_policy: unknown policy ''"),
    "p-policy-escape": ("missed_fire_policy = E'\\x1b[2Jwhenever'",
                        "missed_fire_policy: unknown policy '\\x1b[2Jwhenever'"),
    "p-owner-huge": ("owner = repeat('o', 100000), paused_by = E'\\x1b]0;x\\x07'", None),
}

HEALTHY = ("a-healthy", "z-healthy")
JOBS_TARGET = "b-odd-jobs"  # paused: its hand-written jobs are all it has


def broken() -> dict[str, str]:
    return {name: fault for name, (_, fault) in POISON.items() if fault is not None}


def _force(conn: psycopg.Connection[Any], query: str, params: Any = None) -> None:
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")  # as an older binary would
        conn.execute(query, params)


def seed(conn: psycopg.Connection[Any]) -> str:
    """Write the healthy and poison rows; returns the name of a healthy row with a
    1920-character name (near what the name indexes can hold)."""
    names = [*HEALTHY, JOBS_TARGET, *POISON]
    for name in names:
        conn.execute(
            "INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at, updated_at) "
            "VALUES (%s, '* * * * *', 'k', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')",
            (name,),
        )
    for name, (assignment, _) in POISON.items():
        _force(conn, f"UPDATE awa.cron_jobs SET {assignment} WHERE name = %s", (name,))
    _force(conn, f"INSERT INTO awa.cron_jobs (name, cron_expr, kind, created_at) "
                 f"VALUES ({HUGE_NAME}, '* * * * *', 'k', '2025-01-01T00:00:00Z')")
    row = conn.execute(f"SELECT {HUGE_NAME} AS name").fetchone()
    assert row is not None
    _force(conn, "UPDATE awa.cron_jobs SET paused_at = '2025-01-01T00:00:00Z', paused_by = 'ops' WHERE name = %s",
           (JOBS_TARGET,))
    _seed_jobs(conn)
    _seed_runtimes(conn)
    return str(row["name"])


def _seed_jobs(conn: psycopg.Connection[Any]) -> None:
    """Job rows of JOBS_TARGET that the detail view and the page's last-fire probe read."""
    odd = [
        ("'infinity'", {"cron_fire_time": "2025-01-01T00:00:00Z"}),
        ("'-infinity'", {"cron_fire_time": "not a time"}),
        ("'0044-03-15 BC'", {"cron_fire_time": "infinity", "triggered_manually": "maybe"}),
        ("'2025-01-01T00:00:05Z'", {"cron_fire_time": "0044-03-15 BC"}),
        ("'2025-01-01T00:00:05Z'", {"cron_fire_time": "", "triggered_manually": 7}),
        ("'2025-01-01T00:00:05Z'", {"cron_fire_time": "99999-01-01T00:00:00Z"}),
    ]
    for created, extra in odd:
        conn.execute(
            f"INSERT INTO awa.jobs (kind, created_at, metadata) VALUES ('k', {created}, %s::jsonb)",
            ('{"cron_name": "' + JOBS_TARGET + '", ' + ", ".join(
                f'"{k}": ' + (f'"{v}"' if isinstance(v, str) else str(v)) for k, v in extra.items()) + "}",),
        )
    conn.execute(
        "INSERT INTO awa.jobs (kind, metadata) VALUES ('k', '[\"cron_name\", \"cron_fire_time\"]'), "
        "('k', 'null'), ('k', '5')"
    )
    conn.execute(
        "UPDATE awa.cron_jobs SET last_enqueued_at = '2025-01-01T00:00:00Z' WHERE name = %s", (JOBS_TARGET,)
    )


def _seed_runtimes(conn: psycopg.Connection[Any]) -> None:
    """Runtime snapshot rows with instants and intervals Python cannot hold."""
    conn.execute(
        """
        INSERT INTO awa.runtime_instances (instance_id, hostname, pid, version, started_at, last_seen_at,
                                           snapshot_interval, stopped_at, health, owner)
        VALUES (gen_random_uuid(), E'host\\x1b[2J', -1, '', '-infinity', 'infinity', '178000000 years',
                NULL, repeat('h', 10000), NULL),
               (gen_random_uuid(), '', 2147483647, repeat('v', 10000), '0044-03-15 BC', '0044-03-15 BC',
                '-178000000 years', 'infinity', 'healthy', '')
        """
    )
