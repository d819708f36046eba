"""Size caps and lookalike names: refused at registration and, for rows written by hand,
by the database (migration v004) with the same words; rows that predate the caps keep
firing and the migration never fails on them."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force

from awa_tui import Client
from awa_tui.engine import migrations
from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.schedules.definition import Schedule

CAP = 262144
LOOKALIKES = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
              "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]


def _refused(**fields: Any) -> str:
    definition = {"name": "s", "cron_expr": "* * * * *", "kind": "k", **fields}
    with pytest.raises(ValidationError) as caught:
        Schedule.build(definition.pop("name"), definition.pop("cron_expr"), definition.pop("kind"), **definition)
    return str(caught.value)


def _insert_refusal(conn: psycopg.Connection[Any], name: str, cron_expr: str = "* * * * *",
                    args: str = "{}", metadata: str = "{}") -> str:
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        conn.execute(
            "INSERT INTO awa.cron_jobs (name, cron_expr, kind, args, metadata) VALUES (%s, %s, 'k', %s, %s)",
            (name, cron_expr, args, metadata),
        )
    return caught.value.diag.message_primary or ""


@pytest.mark.parametrize("char", LOOKALIKES, ids=[f"U+{ord(c):04X}" for c in LOOKALIKES])
def test_lookalike_names_are_refused_by_the_api_and_the_database(conn: psycopg.Connection[Any], char: str) -> None:
    escaped = f"\\u{ord(char):04x}"
    assert _refused(name=f"pay{char}roll") == (
        f"name: must not contain bidi controls or zero-width characters: 'pay{escaped}roll'"
    )
    assert _insert_refusal(conn, f"pay{char}roll") == (
        f'name: must not contain bidi controls or zero-width characters: "pay{escaped}roll"'
    )


def test_args_and_metadata_cap_is_the_same_bytes_in_the_api_and_the_database(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    # {"a": "x...x"} is 9 bytes plus the string, as Postgres prints it.
    at_cap = {"a": "x" * (CAP - 9)}
    client.periodic("at-cap", "* * * * *", "k", at_cap, metadata=at_cap)
    client.sync()
    assert conn.execute(
        "SELECT octet_length(args::text) AS a, octet_length(metadata::text) AS m FROM awa.cron_jobs"
    ).fetchone() == {"a": CAP, "m": CAP}
    over = {"a": "x" * (CAP - 8)}
    assert _refused(args=over) == f"args: at most {CAP} bytes as JSON, got {CAP + 1} bytes"
    assert _refused(metadata=over) == f"metadata: at most {CAP} bytes as JSON, got {CAP + 1} bytes"
    text = '{"a": "' + "x" * (CAP - 8) + '"}'
    assert _insert_refusal(conn, "raw", args=text) == f"args: at most {CAP} bytes as JSON, got {CAP + 1} bytes"
    assert _insert_refusal(conn, "raw", metadata=text) == f"metadata: at most {CAP} bytes as JSON, got {CAP + 1} bytes"
    # Multi-byte text counts in bytes, in both places.
    assert _refused(args={"a": "é" * (CAP // 2)}) == f"args: at most {CAP} bytes as JSON, got {CAP + 9} bytes"


@pytest.mark.parametrize(("count", "accepted"), [(850, True), (900, False)])
def test_floats_are_measured_as_postgres_writes_them(conn: psycopg.Connection[Any], count: int, accepted: bool) -> None:
    """1e300 is 6 bytes to json.dumps and 301 digits in jsonb: the API must not accept what
    the database then refuses at sync (that would fail the whole sync)."""
    value = {"f": [1e300] * count}
    stored = 7 + count * 301 + 2 * (count - 1) + 2
    if accepted:
        Schedule.build("s", "* * * * *", "k", value)
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, args) VALUES ('s', '* * * * *', 'k', %s)",
                     ('{"f": [' + ", ".join(["1e300"] * count) + "]}",))
        assert conn.execute("SELECT octet_length(args::text) AS n FROM awa.cron_jobs").fetchone() == {"n": stored}
    else:
        assert _refused(args=value) == f"args: at most {CAP} bytes as JSON, got {stored} bytes"
        assert _insert_refusal(conn, "s", args='{"f": [' + ", ".join(["1e300"] * count) + "]}") == (
            f"args: at most {CAP} bytes as JSON, got {stored} bytes"
        )


def test_cron_expr_length_and_control_characters(client: Client, conn: psycopg.Connection[Any]) -> None:
    longest = ",".join(["5"] * 124) + " 0 * * * "  # 256 characters, a valid expression
    assert len(longest) == 256
    client.periodic("longest", longest, "k")
    client.sync()
    too_long = longest + "0"
    assert _refused(cron_expr=too_long) == (
        f"cron_expr: at most 256 characters, got {repr(too_long)[:57]}... (257 characters)"
    )
    assert _insert_refusal(conn, "raw", cron_expr=too_long) == (
        f'cron_expr: at most 256 characters, got "{too_long[:60]}..." (257 characters)'
    )
    for bad, shown in [("* * * * *\n", "\\n"), ("*\t* * * *", "\\t"), ("* * * * *\x85", "\\x85")]:
        assert _refused(cron_expr=bad) == f"cron_expr: must not contain newlines or control characters: {bad!r}"
        assert shown in _refused(cron_expr=bad)
    assert _insert_refusal(conn, "raw", cron_expr="* * * * *\n") == (
        'cron_expr: must not contain newlines or control characters: "* * * * *\\u000a"'
    )
    conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind) VALUES ('ok', '* * * * *', 'k')")
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        conn.execute("UPDATE awa.cron_jobs SET cron_expr = E'* * * * *\\r' WHERE name = 'ok'")
    assert caught.value.diag.message_primary == (
        'cron_expr: must not contain newlines or control characters: "* * * * *\\u000d"'
    )
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        conn.execute("UPDATE awa.cron_jobs SET name = E'ok\\u2067' WHERE name = 'ok'")
    assert caught.value.diag.message_primary == (
        'name: must not contain bidi controls or zero-width characters: "ok\\u2067"'
    )


def test_rows_that_predate_the_caps_keep_firing_and_can_be_paused(
    client: Client, conn: psycopg.Connection[Any]
) -> None:
    force(conn, "INSERT INTO awa.cron_jobs (name, cron_expr, kind, args, created_at) VALUES "
                "(E'old\\u202ename', '* * * * *', 'k', jsonb_build_object('a', repeat('x', 300000)), "
                "'2025-01-01T00:00:00Z')")
    name = "old\u202ename"
    result = client.evaluate(now=at("2025-01-01T00:01:00"))
    assert ([(j.name, j.fire_time) for j in result.jobs], result.errors) == ([(name, "2025-01-01T00:01:00Z")], [])
    client.actions.pause(name, operator="ops@test")
    client.actions.resume(name, operator="ops@test")
    conn.execute("UPDATE awa.cron_jobs SET priority = 3 WHERE name = %s", (name,))  # unrelated column: allowed
    client.evaluate(now=at("2025-01-01T00:02:00"))
    assert fire_times(conn, name) == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]


def test_the_migration_never_fails_on_rows_that_break_the_caps(
    empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [m for m in every if m.version < 4])
    assert migrations.migrate(empty_dsn) == [1, 2, 3]
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO awa.cron_jobs (name, cron_expr, kind, args, metadata, last_enqueued_at) VALUES "
            "(E'a\\u200bb', repeat('* ', 200) || E'\\n', 'k', jsonb_build_object('a', repeat('x', 300000)), "
            " jsonb_build_object('m', repeat('y', 300000)), 'infinity')"
        )
    monkeypatch.setattr(migrations, "available", lambda: every)
    assert migrations.migrate(empty_dsn) == [m.version for m in every if m.version >= 4]
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT awa.cron_job_fault(c) FROM awa.cron_jobs c").fetchone()
    assert row == ("last_enqueued_at infinity is outside the supported range 0001-01-03..9999-12-29 UTC",)
