"""Bad input sweep (S1, S2, S38): generated schedule definitions (cron strings, zones,
names, args/metadata) and command lines. Every case ends in a clear one-line error or a
correct result: nothing crashes, and a refused definition writes nothing."""

from __future__ import annotations

import json
import math
import re
import zoneinfo
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from croniter import croniter
from hypothesis import HealthCheck, Phase, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from awa_tui import Client
from awa_tui.engine.core.errors import AwaError, ValidationError

from .cli_tree import assert_one_line_error, leaves, run_cli
from .harness import Summary
from .plugin import soak_scale

FIELDS = {"name", "cron_expr", "timezone", "kind", "queue", "args", "metadata", "tags", "priority",
          "max_attempts", "missed_fire_policy"}


def sweep(examples: int, **kwargs: Any) -> settings:
    """Hypothesis settings of one sweep: `examples` in the CI form, times the soak factor."""
    return settings(max_examples=examples * soak_scale(), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], **kwargs)


# --- strategies -------------------------------------------------------------------------------

# Every code point, lone surrogates and controls included.
ANY_CHAR = st.characters(codec=None, exclude_categories=())
NASTY = [
    "", " ", "'; DROP TABLE awa.cron_jobs; --", "%s", "%(name)s", "{}", "$$", "\\", "\\u0000", "\x00", "\x1b[31m",
    "\u202e", "\ud800", "\udcff", "名前", "😀" * 50, "a\nb", "NULL", "*",
]
# Long strings are built, not listed, so failure reports stay readable.
LONG = st.sampled_from([199, 200, 201, 10_000]).map(lambda n: "a" * n)
TEXT = st.one_of(st.sampled_from(NASTY), LONG, st.text(ANY_CHAR, max_size=40), st.text(max_size=250))
TOKENS = ["*", "*/5", "*/0", "0", "59", "60", "1-5", "5-1", "1,2,3", "JAN", "mon", "sun-sat", "7", "L", "W",
          "#", "?", "H", "99999999999999999999", "-1", "1/2/3", ",", "-", "/"]
FIELD = st.sampled_from(["*", "*/2", "*/15", "0", "5", "1-5", "1,15", "mon-fri", "JAN", "7", "L"])
CRON = st.one_of(
    st.lists(FIELD, min_size=5, max_size=6).map(" ".join),
    st.lists(st.sampled_from(TOKENS), min_size=0, max_size=8).map(" ".join),
    st.sampled_from(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly", "@reboot", "@every 5s",
                     "@", "* * * * * *", "0 0 30 2 *", "0 0 31 4 *", "  *  *  *  *  *  ", "*\t* * * *"]),
    TEXT,
)
ZONES = st.one_of(
    st.sampled_from(sorted(zoneinfo.available_timezones())),
    st.sampled_from(["", "utc", "../../etc/passwd", "/etc/localtime", "Europe/Paris\x00", "posixrules", "Factory",
                     "+01:00", "GMT+5", "EST5EDT", "Europe/", "Europe//Paris", "x" * 300]),
    TEXT,
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True), TEXT,
)
KEYS = st.one_of(TEXT, st.integers(), st.booleans(), st.none(), st.floats(), st.tuples(st.integers()))
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=12
)


def _deep(depth: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return value


CLEAN_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=12,
)
ODD_OBJECTS = {
    "1 MB string": lambda: {"big": "x" * 1_000_000}, "5000-digit int": lambda: {"n": 10**5000},
    "50 deep": lambda: _deep(50), "5000 deep": lambda: _deep(5000), "NaN": lambda: {"nan": math.nan},
    "-inf": lambda: {"inf": -math.inf}, "bytes": lambda: {"k": b"bytes"}, "set": lambda: {"s": {1, 2}},
}
OBJECTS = st.one_of(
    st.dictionaries(st.text(), CLEAN_JSON, max_size=5),
    st.dictionaries(KEYS, JSONISH, max_size=5),
    st.sampled_from(sorted(ODD_OBJECTS)).map(lambda k: ODD_OBJECTS[k]()),
    JSONISH,
)


# --- one definition -------------------------------------------------------------------------


def _rows(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) AS n FROM awa.cron_jobs").fetchone()
    return int(row["n"]) if row else 0


EXAMPLES: Counter[str] = Counter()  # cases run, per outcome, for the summary table


def _note(text: str) -> None:
    EXAMPLES[text.split(":")[0]] += 1
    if currently_in_test_context():
        event(text)  # the sweep's statistics (--hypothesis-show-statistics)


@pytest.fixture
def sweep_summary(summary: Summary) -> Iterator[Summary]:
    """The sweep's line: how many generated cases ended refused, and how many fired."""
    EXAMPLES.clear()
    yield summary
    summary.runs = sum(EXAMPLES.values())
    summary.notes = ", ".join(f"{n} {k}" for k, n in sorted(EXAMPLES.items())) + "; no crash, nothing half-written"


def definition_outcome(dsn: str, conn: psycopg.Connection[Any], **definition: Any) -> str:
    """Register one definition the way an application does; return 'refused: <why>' or 'fired'.

    Refused: one line naming the field, nothing written. Accepted: stored as given, fires
    without an error, and a job carries its name."""
    kwargs = {"name": "ok", "cron_expr": "* * * * *", "kind": "rel.kind", **definition}
    client = Client(dsn, operator="sweeper")
    try:
        try:
            client.periodic(kwargs.pop("name"), kwargs.pop("cron_expr"), kwargs.pop("kind"), **kwargs)
        except ValidationError as exc:
            message = str(exc)
            assert "\n" not in message and len(message) <= 500, message
            assert message.split(":", 1)[0] in FIELDS, message
            assert _rows(conn) == 0
            _note(f"refused: {message.split(':', 1)[0]}")
            return f"refused: {message}"
        schedule = client.schedules[0]
        client.sync()  # a definition validation let through must be storable
        row = conn.execute("SELECT * FROM awa.cron_jobs").fetchone()
        assert row is not None and row["name"] == schedule.name
        assert _same_json([row["args"], row["metadata"]], json.loads(json.dumps([schedule.args, schedule.metadata])))
        now = client.reads.db_time() + timedelta(days=40, seconds=17)
        result = client.evaluate(now=now)
        assert result.errors == [], result.errors
        # A schedule that never fired fires once, its latest instant in (registration, now].
        latest = _latest_instant(row["cron_expr"], row["timezone"], row["created_at"], now)
        expected = [] if latest is None else [(schedule.name, latest.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))]
        assert [(j.name, j.fire_time) for j in result.jobs] == expected, (row["cron_expr"], row["timezone"])
        _note("accepted and fired" if result.jobs else "accepted")
        return "fired"
    finally:
        client.close()
        conn.execute("DELETE FROM awa.jobs")
        conn.execute("DELETE FROM awa.cron_jobs")


# The oracle of when an accepted expression fires: croniter 7.0.0, the arithmetic the
# engine's replaced (tests/engine/cron compares the two); the engine's own is not asked.
NICKNAMES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
             "@daily": "0 0 * * *", "@hourly": "0 * * * *"}


# An interval (`@every 5s`, S73) counts whole periods from the Unix epoch when it has no
# start: the oracle's own arithmetic, in whole seconds.
EVERY = re.compile(r"@every (\d+)([smhd])", re.IGNORECASE)
EVERY_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _latest_instant(cron_expr: str, zone: str, after: datetime, at: datetime) -> datetime | None:
    """The last instant of `cron_expr` (5 fields, or 6 with the seconds first, or an
    interval) in `zone` within (after, at], or None. ? reads as *; a restricted day of month
    and a restricted day of week combine with OR (each asked of croniter alone)."""
    text = " ".join(cron_expr.split()).replace("?", "*")
    every = EVERY.fullmatch(text)
    if every is not None:
        period = int(every[1]) * EVERY_UNIT_S[every[2].lower()]
        whole = int((at - EPOCH).total_seconds()) // period * period
        instant = EPOCH + timedelta(seconds=whole)
        return instant if instant > after else None
    fields = NICKNAMES.get(text.lower(), text).split(" ")
    seconds = [fields.pop(0)] if len(fields) == 6 else []
    minute, hour, dom, month, dow = fields
    days = [(dom, "*"), ("*", dow)] if "*" not in (dom, dow) else [(dom, dow)]
    start = at.astimezone(zoneinfo.ZoneInfo(zone))
    latest = max(croniter(" ".join([minute, hour, d, month, w, *seconds]), start).get_prev(datetime)
                 for d, w in days)
    return latest if latest > after else None


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality as jsonb keeps it: a number is a number (7.2e16 may come back an int)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


@sweep(120)
@given(name=TEXT, kind=TEXT, queue=TEXT)
def test_names_sweep(dsn: str, conn: psycopg.Connection[Any], sweep_summary: Summary, name: str, kind: str,
                     queue: str) -> None:
    definition_outcome(dsn, conn, name=name, kind=kind, queue=queue)


@sweep(150)
@given(cron_expr=CRON, timezone=ZONES, policy=st.sampled_from(["coalesce", "catch_up"]))
@example(cron_expr="@every 5s", timezone="Africa/Abidjan", policy="coalesce")  # accepted since S73
@example(cron_expr="@every 5s", timezone="UTC", policy="catch_up")
def test_cron_and_zone_sweep(dsn: str, conn: psycopg.Connection[Any], sweep_summary: Summary, cron_expr: str,
                             timezone: str, policy: str) -> None:
    definition_outcome(dsn, conn, cron_expr=cron_expr, timezone=timezone, missed_fire_policy=policy)


@sweep(120)
@given(args=OBJECTS, metadata=OBJECTS, tags=st.just([]) | st.lists(TEXT, max_size=22))
def test_json_sweep(dsn: str, conn: psycopg.Connection[Any], sweep_summary: Summary, args: Any, metadata: Any,
                    tags: list[str]) -> None:
    definition_outcome(dsn, conn, args=args, metadata=metadata, tags=tags)


# --- operator actions on odd names ----------------------------------------------------------


@sweep(60)
@given(name=TEXT)
def test_actions_on_odd_names_fail_in_one_line(client: Client, name: str) -> None:
    for action in (client.actions.pause, client.actions.resume, client.actions.trigger, client.actions.remove,
                   client.reads.get_schedule):
        with pytest.raises(AwaError) as caught:
            action(name)
        assert "\n" not in str(caught.value)


# --- the command line ---------------------------------------------------------------------------

SAFE_DSNS = ["host=/nonexistent dbname=x", "port=notaport", "postgresql://127.0.0.1:1/x", "not a dsn ===", ""]
OPTIONS = ["--json", "--help", "-n", "--count", "--filter", "--limit", "--target", "--operator", "--bogus", "--",
           "-", "-1", "0", "1e9", "99999999999999999999", "--json=yes", "--no-json", "-h"]
ARG_BYTES = st.binary(min_size=0, max_size=30).filter(lambda b: b"\x00" not in b)
# As a shell passes them: bytes, where invalid UTF-8 reaches Python as lone surrogates.
ARGV_NASTY = [a.encode(errors="surrogateescape") for a in NASTY if "\x00" not in a and "\ud800" not in a]
ARG = st.one_of(st.sampled_from(OPTIONS), ARG_BYTES, st.sampled_from(ARGV_NASTY),
                st.sampled_from(["rel-x", "default"]))


@st.composite
def command_lines(draw: st.DrawFn) -> list[str | bytes]:
    leaf = draw(st.sampled_from(leaves()))
    argv: list[str | bytes] = [*leaf.path, *draw(st.lists(ARG, max_size=6))]
    if draw(st.booleans()):
        argv += ["--dsn", draw(st.sampled_from(SAFE_DSNS))]  # DSNs that stay on this machine
    return argv


def _check_cli(argv: list[str | bytes], env: dict[str, str]) -> None:
    out = run_cli(argv, env)
    EXAMPLES[f"exit {out.code}"] += 1
    assert "Traceback" not in out.stderr, out.describe()
    assert out.code in (0, 1, 2), out.describe()
    if out.code != 0:
        assert_one_line_error(out)


@sweep(6, phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking subprocess batches takes minutes
@given(batch=st.lists(command_lines(), min_size=6, max_size=6))
def test_cli_random_arguments(dsn: str, tmp_path: Path, sweep_summary: Summary, batch: list[list[str | bytes]]) -> None:
    env = {"AWA_DATABASE_URL": dsn, "AWA_EMBEDDED_HOME": str(tmp_path / "embedded"), "COLUMNS": "100"}
    with ThreadPoolExecutor(3) as pool:
        for future in [pool.submit(_check_cli, argv, env) for argv in batch]:
            future.result()


def test_every_command_on_a_database_without_the_schema(empty_dsn: str, tmp_path: Path, summary: Summary) -> None:
    env = {"AWA_DATABASE_URL": empty_dsn, "AWA_EMBEDDED_HOME": str(tmp_path / "embedded")}
    commands = leaves()
    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(lambda leaf: run_cli(leaf.argv(), env), commands))
    for out in outcomes:
        assert_one_line_error(out, contains=["awa-tui migrate"])
    with psycopg.connect(empty_dsn) as conn:
        row = conn.execute("SELECT to_regnamespace('awa') IS NULL AS clean").fetchone()
        assert row and row[0], "a command wrote into a database without the schema"
    summary.runs = len(outcomes)
    summary.notes = "every command on a database without the schema: one line, says run migrate"


# --- regressions of what the sweep found --------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "definition"),
    [
        ("name", {"name": "bad\udcff"}),
        ("kind", {"kind": "\ud800"}),
        ("queue", {"queue": "q\udfff"}),
        ("tags", {"tags": ["ok", "\udcff"]}),
        ("args", {"args": {"k": "\ud800"}}),
        ("args", {"args": {"\udcff": 1}}),
        ("metadata", {"metadata": {"k": ["\x00"]}}),
        ("args", {"args": _deep(5000)}),
        ("args", {"args": {"n": 10**5000}}),
    ],
)
def test_text_postgres_cannot_store_is_refused_at_registration(
    dsn: str, conn: psycopg.Connection[Any], field: str, definition: dict[str, Any]
) -> None:
    """Regression: lone surrogates (and NUL inside JSON) passed validation and failed the
    first sync with 'database error: invalid input syntax for type json'; a 5000-deep dict
    raised RecursionError and a 5000-digit int ValueError instead of ValidationError."""
    assert definition_outcome(dsn, conn, **definition).startswith(f"refused: {field}: ")


def test_invalid_utf8_on_the_command_line_is_one_line(dsn: str, tmp_path: Path) -> None:
    """Regression: bytes that are not UTF-8 reach Python as lone surrogates, which psycopg
    cannot encode: every command that sent one to Postgres died with a traceback."""
    env = {"AWA_DATABASE_URL": dsn, "AWA_EMBEDDED_HOME": str(tmp_path)}
    for argv in ([b"cron", b"pause", b"\xff"], [b"cron", b"show", b"x\xfe"], [b"queue", b"drain", b"\xff"],
                 [b"cron", b"list", b"--filter", b"\xff"], [b"audit", b"--target", b"\xff"]):
        assert_one_line_error(run_cli(argv, env), contains=["not valid Unicode"])


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    """Regression: usage errors were a multi-line boxed panel (S38: one line)."""
    env = {"AWA_EMBEDDED_HOME": str(tmp_path)}
    for argv, text in ((["cron", "pause"], "Missing argument"), (["cron", "list", "--bogus"], "No such option"),
                       (["nosuch"], "No such command"), (["cron", "next", "x", "-n", "abc"], "--count")):
        out = run_cli(argv, env)
        assert out.code == 2, out.describe()
        assert_one_line_error(out, contains=[text])
    # A bare group still shows its help (that is the answer, not an error).
    assert "Usage" in run_cli(["cron"], env).stdout + run_cli(["cron"], env).stderr
