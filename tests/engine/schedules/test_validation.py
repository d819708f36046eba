"""S1/S2: eager validation of schedule definitions; nothing is written for a bad one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from engine_helpers import at

from awa_tui import Client, ValidationError
from awa_tui.engine.cron.expression import upcoming_fires

GOOD = {"name": "ok", "cron_expr": "* * * * *", "kind": "test.job"}

# (field overrides, field named in the message, text the message must quote)
BAD_DEFINITIONS: list[tuple[dict[str, Any], str, str]] = [
    ({"name": ""}, "name", "''"),
    ({"name": "n" * 201}, "name", "nnnnnnnn"),
    ({"name": "bad\nname"}, "name", "'bad\\nname'"),
    ({"name": "tab\tname"}, "name", "'tab\\tname'"),
    ({"name": "del\x7fname"}, "name", "'del\\x7fname'"),
    ({"name": 42}, "name", "42"),
    ({"cron_expr": "* * * * * * *"}, "cron_expr", "'* * * * * * *'"),
    ({"cron_expr": "* * * *"}, "cron_expr", "'* * * *'"),
    ({"cron_expr": ""}, "cron_expr", "empty"),
    ({"cron_expr": "@reboot"}, "cron_expr", "'@reboot'"),
    ({"cron_expr": "@daily extra"}, "cron_expr", "'@daily extra'"),
    ({"cron_expr": "60 * * * *"}, "cron_expr", "'60 * * * *'"),
    ({"cron_expr": "* 24 * * *"}, "cron_expr", "'* 24 * * *'"),
    ({"cron_expr": "0 0 32 * *"}, "cron_expr", "'0 0 32 * *'"),
    ({"cron_expr": "0 0 * 13 *"}, "cron_expr", "'0 0 * 13 *'"),
    ({"cron_expr": "0 0 * * 8"}, "cron_expr", "'0 0 * * 8'"),
    ({"cron_expr": "61 * * * * *"}, "cron_expr", "'61 * * * * *'"),
    ({"cron_expr": "*/0 * * * *"}, "cron_expr", "'*/0 * * * *'"),
    # The day forms (S55) refused where they mean nothing:
    ({"cron_expr": "0 0 * * 1#6"}, "cron_expr", "'1#6'"),
    ({"cron_expr": "0 0 * * 1#0"}, "cron_expr", "'1#0'"),
    ({"cron_expr": "0 L * * *"}, "cron_expr", "'L'"),
    ({"cron_expr": "L 0 * * *"}, "cron_expr", "'L'"),
    ({"cron_expr": "0 0 1-5W * *"}, "cron_expr", "'1-5W'"),
    ({"cron_expr": "0 0 L/2 * *"}, "cron_expr", "'L/2'"),
    ({"cron_expr": "0 0 5L * *"}, "cron_expr", "'5L'"),
    ({"cron_expr": "0 0 * * L"}, "cron_expr", "'L'"),
    ({"cron_expr": "H,5 * * * *"}, "cron_expr", "'H,5'"),  # H only as a whole field (issue 16)
    ({"cron_expr": "0 0 JAN * *"}, "cron_expr", "'JAN'"),
    ({"cron_expr": "0 0 * * JAN"}, "cron_expr", "'JAN'"),
    ({"cron_expr": "0 0 * MON *"}, "cron_expr", "'MON'"),
    ({"cron_expr": "0 0 31 2 *"}, "cron_expr", "'0 0 31 2 *'"),
    ({"cron_expr": None}, "cron_expr", "None"),
    ({"timezone": "Mars/Olympus_Mons"}, "timezone", "'Mars/Olympus_Mons'"),
    ({"timezone": ""}, "timezone", "''"),
    ({"timezone": "../../etc/passwd"}, "timezone", "'../../etc/passwd'"),
    ({"priority": 0}, "priority", "0"),
    ({"priority": 5}, "priority", "5"),
    ({"priority": "2"}, "priority", "'2'"),
    ({"priority": True}, "priority", "True"),
    ({"max_attempts": 0}, "max_attempts", "0"),
    ({"max_attempts": 1001}, "max_attempts", "1001"),
    ({"max_attempts": 2.5}, "max_attempts", "2.5"),
    ({"queue": ""}, "queue", "''"),
    ({"queue": "q" * 201}, "queue", "qqqqqqq"),
    ({"queue": "a\x00b"}, "queue", "'a\\x00b'"),
    ({"kind": ""}, "kind", "''"),
    ({"kind": "k" * 201}, "kind", "kkkkkkk"),
    ({"tags": [f"t{i}" for i in range(21)]}, "tags", "21"),
    ({"tags": "solo"}, "tags", "'solo'"),
    ({"tags": ["ok", ""]}, "tags", "''"),
    ({"tags": ["ok", 7]}, "tags", "7"),
    ({"args": [1, 2]}, "args", "[1, 2]"),
    ({"args": {"when": datetime(2025, 1, 1)}}, "args", "datetime"),
    ({"args": {"x": float("nan")}}, "args", "{'x': nan}"),
    ({"args": {"text": "nul\x00inside"}}, "args", "'nul\\x00inside'"),
    ({"args": {"deep": [{"k": "\x00"}]}}, "args", "NUL"),
    ({"args": {1: "int key"}}, "args", "got 1"),
    ({"metadata": {"key\x00": 1}}, "metadata", "NUL"),
    ({"metadata": "meta"}, "metadata", "'meta'"),
    ({"metadata": {"x": {1, 2}}}, "metadata", "set"),
    ({"missed_fire_policy": "skip"}, "missed_fire_policy", "'skip'"),
    ({"missed_fire_policy": "CATCH_UP"}, "missed_fire_policy", "'CATCH_UP'"),
]


def _register(client: Any, **overrides: Any) -> Any:
    spec = {**GOOD, **overrides}
    name, cron_expr, kind = spec.pop("name"), spec.pop("cron_expr"), spec.pop("kind")
    args = spec.pop("args", None)
    return client.periodic(name, cron_expr, kind, args, **spec)


@pytest.mark.parametrize(("overrides", "field", "quoted"), BAD_DEFINITIONS)
def test_bad_definition_is_refused_at_the_call(overrides: dict[str, Any], field: str, quoted: str) -> None:
    client = Client("postgresql://unused@127.0.0.1:1/unused")  # validation never touches the database
    with pytest.raises(ValidationError) as caught:
        _register(client, **overrides)
    message = str(caught.value)
    assert message.startswith(f"{field}:"), message
    assert quoted in message, message
    assert "\n" not in message
    assert client.schedules == []


def test_nothing_is_written_for_bad_definitions(client: Any, conn: Any) -> None:
    for overrides, _, _ in BAD_DEFINITIONS:
        with pytest.raises(ValidationError):
            _register(client, **overrides)
    assert client.sync() == {"inserted": 0, "updated": 0}
    assert conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()["n"] == 0


GOOD_DEFINITIONS: list[dict[str, Any]] = [
    {"name": "n" * 200},
    {"name": "ünïcödé name with spaces"},
    {"cron_expr": "0 0 * * 7"},
    {"cron_expr": "0 0 1 JAN-DEC SUN-SAT"},
    {"cron_expr": "0 0 * jan,Feb mon-fri"},
    {"cron_expr": "*/15 0-6,18-23 1-31/2 * *"},
    {"cron_expr": "30 0 12 * * *"},
    *({"cron_expr": nick} for nick in ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly")),
    {"timezone": "America/New_York"},
    {"timezone": "Australia/Lord_Howe"},
    {"priority": 1},
    {"priority": 4},
    {"max_attempts": 1},
    {"max_attempts": 1000},
    {"queue": "q" * 200},
    {"kind": "k" * 200},
    {"tags": [f"t{i}" for i in range(20)]},
    {"args": {"nested": {"list": [1, "two", None, True, 1.5]}}},
    {"args": {"backslash": "\\u0000 is not a NUL"}},
    {"metadata": {"team": "billing"}},
    {"missed_fire_policy": "catch_up"},
]


def test_good_definitions_are_accepted_and_synced_exactly(client: Any, conn: Any) -> None:
    expected = {}
    for number, overrides in enumerate(GOOD_DEFINITIONS):
        overrides = {"name": f"good-{number:02d}", **overrides}
        schedule = _register(client, **overrides)
        expected[schedule.name] = schedule.definition()
    assert client.sync() == {"inserted": len(GOOD_DEFINITIONS), "updated": 0}
    rows = {r["name"]: r for r in conn.execute("SELECT * FROM awa.cron_jobs").fetchall()}
    assert set(rows) == set(expected)
    for name, definition in expected.items():
        assert {k: rows[name][k] for k in definition} == definition


def test_registering_the_same_name_twice_is_an_error(client: Any, conn: Any) -> None:
    client.periodic("twice", "* * * * *", "test.job")
    with pytest.raises(ValidationError, match=r"^name: schedule 'twice' is already registered"):
        client.periodic("twice", "0 * * * *", "test.other")
    assert [s.cron_expr for s in client.schedules] == ["* * * * *"]
    client.sync()
    row = conn.execute("SELECT cron_expr, kind FROM awa.cron_jobs").fetchall()
    assert row == [{"cron_expr": "* * * * *", "kind": "test.job"}]


def _fires(expr: str, after: str, count: int, zone: str = "UTC") -> list[str]:
    return [f.at.strftime("%Y-%m-%dT%H:%M:%SZ") for f in upcoming_fires(expr, zone, at(after), count)]


def test_six_fields_put_seconds_first() -> None:
    assert _fires("30 0 12 * * *", "2025-01-01T00:00:00", 2) == ["2025-01-01T12:00:30Z", "2025-01-02T12:00:30Z"]
    assert _fires("5 10 * * * *", "2025-01-01T00:00:00", 2) == ["2025-01-01T00:10:05Z", "2025-01-01T01:10:05Z"]


def test_five_fields_fire_on_the_minute() -> None:
    assert _fires("30 12 * * *", "2025-01-01T00:00:00", 1) == ["2025-01-01T12:30:00Z"]


def test_seven_means_sunday_and_names_match_numbers() -> None:
    sundays = ["2025-01-05T00:00:00Z", "2025-01-12T00:00:00Z"]  # 2025-01-01 is a Wednesday
    assert _fires("0 0 * * 7", "2025-01-01T00:00:00", 2) == sundays
    assert _fires("0 0 * * 0", "2025-01-01T00:00:00", 2) == sundays
    assert _fires("0 0 * * SUN", "2025-01-01T00:00:00", 2) == sundays
    assert _fires("0 0 1 FEB-MAR *", "2025-01-01T00:00:00", 3) == [
        "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z", "2026-02-01T00:00:00Z",
    ]


def test_day_of_month_and_day_of_week_both_restricted_means_or() -> None:
    # The 13th of each month OR every Friday (January 2025: Fridays 3, 10, 17, 24).
    assert _fires("0 0 13 * FRI", "2025-01-01T00:00:00", 5) == [
        "2025-01-03T00:00:00Z", "2025-01-10T00:00:00Z", "2025-01-13T00:00:00Z",
        "2025-01-17T00:00:00Z", "2025-01-24T00:00:00Z",
    ]


@pytest.mark.parametrize(
    ("nickname", "expected"),
    [
        ("@yearly", ["2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"]),
        ("@annually", ["2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"]),
        ("@monthly", ["2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"]),
        ("@weekly", ["2025-01-05T00:00:00Z", "2025-01-12T00:00:00Z"]),
        ("@daily", ["2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"]),
        ("@hourly", ["2025-01-01T01:00:00Z", "2025-01-01T02:00:00Z"]),
    ],
)
def test_nicknames(nickname: str, expected: list[str]) -> None:
    assert _fires(nickname, "2025-01-01T00:00:00", 2) == expected


def test_schedule_zone_is_used_for_matching() -> None:
    # 09:00 in Tokyo (UTC+9, no DST) is 00:00Z.
    assert _fires("0 9 * * *", "2025-06-01T00:00:00", 1, "Asia/Tokyo") == ["2025-06-02T00:00:00Z"]
    assert datetime(2025, 6, 2, tzinfo=UTC) == at("2025-06-02T00:00:00Z")
