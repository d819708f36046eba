"""One audit entry in full (the console's audit detail): every column the audit trigger
recorded, the writing session included, read back as written."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from awa_tui import Client
from awa_tui.engine.core.errors import NotFound, ValidationError


def test_an_action_reads_back_with_its_session(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("alpha", "0 * * * *", "test.job")
    client.sync()
    client.actions.pause("alpha", operator="ops-ann")
    row = conn.execute("SELECT id, at, before, after, db_user, host(client_addr) AS client_addr, application_name, "
                       "backend_pid FROM awa.audit_log WHERE action = 'pause'").fetchone()
    record = client.reads.audit_record(row["id"])
    assert (record.id, record.at, record.operator, record.action, record.target) == (
        row["id"], row["at"], "ops-ann", "pause", "alpha")
    assert (record.before, record.after) == (row["before"], row["after"])
    assert record.after["paused_by"] == "ops-ann" and record.before["paused_by"] is None
    # The session as the trigger saw it: this test's own role and backend.
    assert record.db_user == conn.execute("SELECT current_user AS u").fetchone()["u"]
    assert (record.client_addr, record.application_name, record.backend_pid) == (
        row["client_addr"], row["application_name"], row["backend_pid"])
    assert record.backend_pid is not None and record.session_recorded is True


def test_unknown_and_bad_ids_are_one_line(client: Client) -> None:
    with pytest.raises(NotFound, match=r"^no audit entry 999999$"):
        client.reads.audit_record(999999)
    with pytest.raises(ValidationError, match=r"^entry_id: expected a positive integer, got 0$"):
        client.reads.audit_record(0)
