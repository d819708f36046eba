"""Owner and queue names that would look like another name are refused in one line that
names the invisible characters without echoing them; names already stored are still
referred to."""

from __future__ import annotations

from typing import Any

import pytest

from awa_tui import Client, ValidationError
from awa_tui.engine.schedules.definition import Schedule

# Each pair looks identical; the second hides a format character.
LOOKALIKES = {
    "zero-width space": ("billing", "bil\u200bling", "U+200B"),
    "zero-width joiner": ("billing", "billing\u200d", "U+200D"),
    "word joiner": ("mail", "ma\u2060il", "U+2060"),
    "byte-order mark": ("mail", "\ufeffmail", "U+FEFF"),
    "soft hyphen": ("reports", "re\u00adports", "U+00AD"),
    "right-to-left mark": ("reports", "reports\u200f", "U+200F"),
}


@pytest.mark.parametrize("case", LOOKALIKES, ids=list(LOOKALIKES))
def test_a_queue_name_with_a_format_character_is_refused(case: str) -> None:
    plain, hidden, code = LOOKALIKES[case]
    assert Schedule(name="a", cron_expr="* * * * *", kind="k", queue=plain).queue == plain
    with pytest.raises(ValidationError) as refused:
        Schedule(name="a", cron_expr="* * * * *", kind="k", queue=hidden)
    assert str(refused.value) == (f"queue: must not contain invisible format characters (found {code}): "
                                  "two names would look the same")
    assert hidden not in str(refused.value)


@pytest.mark.parametrize("case", LOOKALIKES, ids=list(LOOKALIKES))
def test_a_runtime_owner_with_a_format_character_is_refused(dsn: str, case: str) -> None:
    _, hidden, code = LOOKALIKES[case]
    with pytest.raises(ValidationError) as refused:
        Client(dsn, owner=hidden, authoritative=True)
    assert str(refused.value) == (f"owner: must not contain invisible format characters (found {code}): "
                                  "two names would look the same")


def test_adopt_and_transfer_refuse_a_lookalike_owner(client: Any, conn: Any) -> None:
    client.periodic("loose", "0 * * * *", "test.job")
    client.sync()
    with pytest.raises(ValidationError, match=r"found U\+200B"):
        client.actions.adopt("loose", "bil\u200bling")
    client.actions.adopt("loose", "billing")
    with pytest.raises(ValidationError, match=r"found U\+200B"):
        client.actions.transfer("loose", "pay\u200broll")
    row = conn.execute("SELECT owner FROM awa.cron_jobs WHERE name = 'loose'").fetchone()
    assert row == {"owner": "billing"}
