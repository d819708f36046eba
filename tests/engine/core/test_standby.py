"""S58 in the engine, on a real hot standby: which server a client reached, leadership read
from the replicated lease there, and writes refused before they start."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from awa_tui import Client
from awa_tui.engine.core.errors import ReadOnly
from awa_tui.engine.migrations import migrate
from awa_tui.engine.runtime.leader import LeaderElector


def refusal(pair: Any) -> str:
    return f"{pair.standby.where} is a read-only standby (in recovery): writes go to the primary"


def test_server_role_of_each_server(standby_pair: Any) -> None:
    with Client(standby_pair.dsn(standby_pair.primary), read_only=True) as primary, \
            Client(standby_pair.dsn(standby_pair.standby), read_only=True) as standby:
        assert primary.reads.server_role() == type(primary.reads.server_role())(standby_pair.primary.where)
        role = standby.reads.server_role()
        assert (role.where, role.standby) == (standby_pair.standby.where, True)
        assert role.behind_bytes is not None and role.behind_bytes >= 0


def test_leadership_on_the_standby_is_the_replicated_live_lease(standby_pair: Any) -> None:
    """The standby sees none of the primary's advisory locks: a live lease stands for the
    lock there, and a released one reads as nobody, as on the primary."""
    elector = LeaderElector(standby_pair.dsn(standby_pair.primary), instance_id=uuid.uuid4())
    with Client(standby_pair.dsn(standby_pair.standby), read_only=True) as standby:
        try:
            assert elector.step()
            standby_pair.wait_replayed()
            lead = standby.reads.leadership()
            assert (lead.held, lead.stalled, lead.instance_id) == (True, False, elector.instance_id)
        finally:
            elector.release()
        standby_pair.wait_replayed()
        assert not standby.reads.leadership().held


def test_writes_on_the_standby_are_refused_naming_it(standby_pair: Any) -> None:
    dsn = standby_pair.dsn(standby_pair.standby)
    with pytest.raises(ReadOnly) as migrating:
        migrate(dsn)
    assert str(migrating.value) == refusal(standby_pair)
    with Client(dsn, operator="t") as client:
        client.periodic("sb-engine-x", "* * * * *", "k")
        with pytest.raises(ReadOnly) as starting:
            client.start()
        assert str(starting.value) == f"cannot run: {refusal(standby_pair)}"
        with pytest.raises(ReadOnly) as syncing:
            client.sync()
        assert str(syncing.value) == refusal(standby_pair)
        assert client.reads.write_refusal() == refusal(standby_pair)


def test_a_read_only_session_on_a_primary_keeps_its_own_message(dsn: str) -> None:
    """Only a server in recovery is named a standby: a primary refusing writes for another
    reason (default_transaction_read_only) is not."""
    with Client(f"{dsn} options='-c default_transaction_read_only=on'", operator="t") as client:
        client.periodic("sb-engine-y", "* * * * *", "k")
        with pytest.raises(ReadOnly) as syncing:
            client.sync()
        assert "standby" not in str(syncing.value)
