"""Issue 16: H in cron fields, resolved per schedule name with a hash that never changes.

The pinned values below are the contract: a release that changes one of them moves
every spread schedule of every deployment. The independent oracle (`_documented`) is
the formula of docs/behaviour.md written out with hashlib, not the engine's code.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, schedule_row

from awa_tui import Client
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.spread import resolve_spread
from awa_tui.engine.schedules.definition import Schedule, row_fault

PINNED = {
    ("billing.invoices", "H * * * *"): "54 * * * *",
    ("billing.invoices", "H(0-29) * * * *"): "24 * * * *",
    ("billing.invoices", "H/15 * * * *"): "9,24,39,54 * * * *",
    ("billing.invoices", "H H * * *"): "54 17 * * *",
    ("billing.invoices", "0 0 H * *"): "0 0 3 * *",
    ("reports.daily", "H * * * *"): "49 * * * *",
    ("reports.daily", "H H(9-17) * * H"): "49 15 * * 0",
    ("reports.daily", "H(10-20)/5 H(1-3) H(1-31) H *"): "14,19 1 19 10 *",
    ("tenant-42.sync", "H/15 * * * *"): "10,25,40,55 * * * *",
    ("tenant-42.sync", "H H * * *"): "10 19 * * *",
    ("tenant-42.sync", "0 0 H * *"): "0 0 26 * *",
}


def _documented(name: str, field: str, low: int, high: int) -> int:
    digest = hashlib.sha256(f"awa-H:{field}:{name}".encode()).digest()
    return low + int.from_bytes(digest[:8], "big") % (high - low + 1)


@pytest.mark.parametrize(("name", "written"), list(PINNED))
def test_h_resolves_to_the_pinned_values(name: str, written: str) -> None:
    assert resolve_spread(written, name) == PINNED[(name, written)]
    schedule = Schedule.build(name, written, "k")
    assert (schedule.cron_expr, schedule.cron_written) == (PINNED[(name, written)], written)


def test_pinned_values_follow_the_documented_formula() -> None:
    minute = _documented("billing.invoices", "minute", 0, 59)
    assert minute == 54
    assert _documented("billing.invoices", "minute", 0, 29) == 24
    assert _documented("billing.invoices", "minute", 0, 14) == 9  # H/15: first of 9,24,39,54
    assert _documented("billing.invoices", "hour", 0, 23) == 17
    assert _documented("billing.invoices", "day-of-month", 1, 28) == 3  # H in days: 1..28
    assert _documented("reports.daily", "day-of-week", 0, 6) == 0
    assert _documented("reports.daily", "hour", 9, 17) == 15


def test_spread_of_ten_thousand_names_over_the_minutes() -> None:
    counts = Counter(resolve_spread("H * * * *", f"tenant-{i}.report").split()[0] for i in range(10000))
    assert sorted(counts) == sorted(str(m) for m in range(60))
    assert min(counts.values()) >= 100 and max(counts.values()) <= 240, (min(counts.values()), max(counts.values()))


@pytest.mark.parametrize(("written", "message"), [
    ("H,5 * * * *", "cron_expr: H cannot apply in minute field 'H,5' of 'H,5 * * * *': "
                    "H stands for a whole field (H, H(a-b), H/n or H(a-b)/n)"),
    ("1-H * * * *", "cron_expr: H cannot apply in minute field '1-H'"),
    ("*/H * * * *", "cron_expr: H cannot apply in minute field '*/H'"),
    ("H(30-29) * * * *", "cron_expr: empty or out-of-range H range 'H(30-29)' in the minute field of "
                         "'H(30-29) * * * *' (the field allows 0-59)"),
    ("0 H(20-25) * * *", "cron_expr: empty or out-of-range H range 'H(20-25)' in the hour field"),
    ("H/0 * * * *", "cron_expr: H step /0 in 'H/0' of 'H/0 * * * *' must be 1..60"),
    ("0 0 H(1-31)/40 * *", "cron_expr: H step /40"),
])
def test_h_where_it_cannot_apply_is_refused_in_one_line(written: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        Schedule.build("x", written, "k")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_h_in_a_nickname_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"^cron_expr: H cannot apply in a nickname: '@H'$"):
        Schedule.build("x", "@H", "k")


def test_stored_h_is_resolved_and_fires_at_the_resolved_minute(client: Client, conn: Any) -> None:
    client.periodic("billing.invoices", "H * * * *", "k")
    client.sync()
    row = schedule_row(conn, "billing.invoices")
    assert (row["cron_expr"], row["cron_written"]) == ("54 * * * *", "H * * * *")
    conn.execute("UPDATE awa.cron_jobs SET created_at = %s", (at("2025-01-01T00:00:00"),))
    assert client.evaluate(now=at("2025-01-01T00:53:59")).jobs == []
    assert [j.fire_time for j in client.evaluate(now=at("2025-01-01T00:54:00")).jobs] == ["2025-01-01T00:54:00Z"]
    assert fire_times(conn, "billing.invoices") == ["2025-01-01T00:54:00Z"]


def test_a_restarted_process_resolves_the_same_and_sync_writes_nothing(dsn: str, conn: Any) -> None:
    first = Client(dsn, operator="a@test")
    first.periodic("reports.daily", "H H(9-17) * * H", "k")
    assert first.sync() == {"inserted": 1, "updated": 0}
    first.close()
    xmin = schedule_row(conn, "reports.daily")["xmin"]
    again = Client(dsn, operator="b@test")
    again.periodic("reports.daily", "H H(9-17) * * H", "k")
    assert again.sync() == {"inserted": 0, "updated": 0}
    again.close()
    row = schedule_row(conn, "reports.daily")
    assert (row["xmin"], row["cron_expr"]) == (xmin, "49 15 * * 0")


def test_next_fires_and_json_show_the_resolved_beside_the_written(client: Client) -> None:
    client.periodic("tenant-42.sync", "H/15 * * * *", "k")
    client.sync()
    info = client.reads.get_schedule("tenant-42.sync")
    assert (info.cron_expr, info.cron_written) == ("10,25,40,55 * * * *", "H/15 * * * *")
    fires = client.reads.next_fires("tenant-42.sync", 3, after=at("2025-01-01T00:00:00"))
    assert [f.utc for f in fires] == [at("2025-01-01T00:10:00"), at("2025-01-01T00:25:00"), at("2025-01-01T00:40:00")]


def test_a_hand_written_h_is_broken_with_one_line(conn: psycopg.Connection[Any]) -> None:
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('hand', 'H * * * *', 'k')")
    row = conn.execute("SELECT *, NULL AS fault FROM awa.cron_jobs WHERE name = 'hand'").fetchone()
    assert row_fault(row) == (
        "cron_expr: H in 'H * * * *' picks a value per schedule name: declare it with periodic() "
        "or `cron override`, which store the resolved expression"
    )


def test_a_stored_definition_whose_resolution_disagrees_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"^cron_expr: '0 \* \* \* \*' is not 'H \* \* \* \*' resolved"):
        Schedule(name="billing.invoices", cron_expr="0 * * * *", kind="k", cron_written="H * * * *")
    same = Schedule(name="billing.invoices", cron_expr="54 * * * *", kind="k", cron_written="H * * * *")
    assert same.definition()["cron_expr"] == "54 * * * *"
