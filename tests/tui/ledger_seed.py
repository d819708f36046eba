"""The console seed (tui_seed.py) with the fire ledger's history added: leadership terms
(with a gap), failed attempts with their errors and tracebacks, a discarded job, a manual
trigger and more audit entries than one page of the audit log. Every value is fixed, so
the tests below state exact expectations worked out by hand from these rows.

Job ids follow tui_seed.JOBS: 1..10 in that order; the manual trigger added here is 11.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from lease_seed import leader_lock_held
from psycopg.types.json import Jsonb
from tui_seed import NOW, RUNTIMES, seed, t

RUNTIME_1 = "6f1c2a9e-0000-4000-8000-000000000001"

# Leadership: led from Mar 1 to Mar 3 00:00, nobody led until Mar 5 00:00, led since.
TERMS = [
    (1, t("00:00:00", 1), t("00:00:00", 3)),
    (2, t("00:00:00", 5), t("00:00:00", 9)),
]
LEADERSHIP_SINCE = t("00:00:00", 1)

# reports.hourly's 12:00 job (id 7, retryable after attempt 2): its two failed attempts.
REPORTS_ERRORS = [
    {"attempt": 1, "error": "ConnectionError: warehouse refused the connection",
     "traceback": 'File "reports/build.py", line 41, in run\n    conn = warehouse.connect()\n'
                  "ConnectionError: warehouse refused the connection",
     "started_at": "2025-03-08T12:00:01+00:00", "at": "2025-03-08T12:00:03+00:00", "runtime": RUNTIME_1},
    {"attempt": 2, "error": "TimeoutError: query ran past 10s",
     "traceback": 'File "reports/build.py", line 57, in run\n    rows = cursor.fetchall()\n'
                  "TimeoutError: query ran past 10s",
     "started_at": "2025-03-08T12:00:13+00:00", "at": "2025-03-08T12:00:23+00:00", "runtime": RUNTIME_1},
]
# cleanup.tmp-files' 11:00 job (id 3): discarded after its third attempt.
CLEANUP_ERRORS = [
    {"attempt": n, "error": "PermissionError: /tmp/spool is read-only", "traceback": None,
     "started_at": f"2025-03-08T11:0{n}:00+00:00", "at": f"2025-03-08T11:0{n}:01+00:00", "runtime": RUNTIME_1}
    for n in (1, 2, 3)
]
AUDIT_FILLER = 230  # more entries than one page (200) of the audit log


def seed_ledger(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        for term, start, end in TERMS:
            conn.execute("INSERT INTO awa.leader_terms (term, instance_id, acquired_at, held_until) "
                         "VALUES (%s, %s, %s, %s)", (term, RUNTIME_1, start, end))
        # Term 2 holds the lease until the seeded leader (app-1, lease_seed) takes term 3 at NOW.
        conn.execute("UPDATE awa.leader_lease SET term = 2, instance_id = %s, acquired_at = %s, renewed_at = %s, "
                     "expires_at = %s", (RUNTIME_1, TERMS[1][1], TERMS[1][2], TERMS[1][2]))
        conn.execute("UPDATE awa.ledger_meta SET leadership_since = %s", (LEADERSHIP_SINCE,))
        conn.execute("UPDATE awa.jobs SET errors = %s, max_attempts = 5, attempted_at = %s WHERE id = 7",
                     (Jsonb(REPORTS_ERRORS), t("12:00:13")))
        conn.execute("UPDATE awa.jobs SET state = 'discarded', attempt = 3, max_attempts = 3, errors = %s, "
                     "attempted_at = %s, finalized_at = %s WHERE id = 3",
                     (Jsonb(CLEANUP_ERRORS), t("11:03:00"), t("11:03:01")))
        assert conn.execute(
            "INSERT INTO awa.jobs (kind, queue, state, attempt, run_at, created_at, attempted_at, finalized_at, "
            "metadata) VALUES ('metrics.rollup', 'default', 'completed', 1, %s, %s, %s, %s, %s) RETURNING id",
            (t("12:00:10"), t("12:00:10"), t("12:00:11"), t("12:00:12"),
             Jsonb({"cron_name": "metrics.rollup", "triggered_manually": True, "triggered_by": "bob@ops"}))
        ).fetchone() == {"id": 11}
        for n in range(AUDIT_FILLER):
            at = t("00:00:00", 2) + timedelta(minutes=n)
            conn.execute(
                "INSERT INTO awa.audit_log (at, operator, action, target, before, after) "
                "VALUES (%s, 'robot@ops', 'trigger', %s, '{}', '{}')", (at, f"filler-{n:03d}"))


@pytest.fixture
def seeded(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[str]:
    """conftest's `seeded` with this module's ledger history added (app-1 holding the leader
    lock): a test module that imports it gets it, and `console`/`console_factory` with it."""
    seed(conn)
    seed_ledger(conn)
    with leader_lock_held(dsn, RUNTIMES[0]["instance_id"], NOW):
        yield dsn
