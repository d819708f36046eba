"""Free text over the joined fields (engine/filter_sql.text_sql, issue 18) selects exactly
the rows one ILIKE per field selects: the name, kind, queue or owner holds the text, any
case. Checked on a real Postgres against that per-field ILIKE run beside it, on rows made
to catch a match that spans two fields, a NULL owner, case folding beyond ASCII, and
LIKE's own characters; both the plain free text (`filter_text`, the console's `/`) and
a parsed filter's free-text term."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from awa_tui import Client
from awa_tui.engine.filtering.sql import _TEXT, _TEXT_JOINED, like_pattern, text_sql
from awa_tui.filters import GRAMMARS, parse

# (name, kind, queue, owner)
ROWS = [
    ("ab", "cd", "q1", None),  # "bc" or "b*c" would match only across name|kind
    ("y", "k", "q1", "x"),  # "y\x1fk" would match only across name|separator|kind
    ("Été-x", "Kind", "Q1", "Ops"),  # case folds, and beyond ASCII
    ("\u03a3\u0391\u03a3", "k", "q1", None),  # Greek capitals: sigma alpha sigma
    ("100%_off", "k", "q1", None),  # LIKE's wildcards, literal in the text
    ("us\x1fsep", "k", "q1", None),  # a field holding the separator itself
    ("plain", "tick", "cronq", "billing"),
]


@pytest.fixture
def rows(client: Client, conn: psycopg.Connection[Any]) -> Client:
    # By hand, as anything that writes SQL may: the CLI and the console show such rows too.
    conn.execute("SET session_replication_role = replica")
    for name, kind, queue, owner in ROWS:
        conn.execute(
            "INSERT INTO awa.cron_jobs (name, cron_expr, timezone, kind, queue, args, missed_fire_policy, owner) "
            "VALUES (%s, '0 3 * * *', 'UTC', %s, %s, '{}'::jsonb, 'coalesce', %s)",
            (name, kind, queue, owner),
        )
    conn.execute("RESET session_replication_role")
    return client


def _per_field(conn: psycopg.Connection[Any], pattern: str) -> list[str]:
    """The oracle: one ILIKE per field, as the free text always matched."""
    return [r["name"] for r in conn.execute(
        f"SELECT c.name FROM awa.cron_jobs c WHERE {_TEXT.format(p='%(p)s')} ORDER BY c.name", {"p": pattern})]


# Matches that need the database to fold case beyond ASCII: a server whose LC_CTYPE is C
# (the embedded one) folds ASCII only, and then neither form matches them.
NEEDS_FOLD = {"été", "\u03c3\u03b1\u03c3", "ÉTÉ"}


def _expected(conn: psycopg.Connection[Any], text: str, expected: list[str]) -> list[str]:
    row = conn.execute("SELECT 'É' ILIKE 'é' AS folds").fetchone()
    return expected if text not in NEEDS_FOLD or (row and row["folds"]) else []


def _like(text: str) -> str:
    """The pattern of the plain free text (views._like)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@pytest.mark.parametrize(("text", "expected"), [
    ("bc", []),  # never across two fields
    ("b", ["ab", "plain"]),  # "plain" by its owner, billing
    ("y\x1fk", []),  # holds the separator: matched field by field
    ("s\x1fs", ["us\x1fsep"]),
    ("été", ["Été-x"]),
    ("OPS", ["Été-x"]),  # the owner
    ("\u03c3\u03b1\u03c3", ["\u03a3\u0391\u03a3"]),
    ("%_", ["100%_off"]),
    ("_", ["100%_off"]),
    ("billing", ["plain"]),
    ("q1", sorted(n for n, _k, q, _o in ROWS if q.lower() == "q1")),
    ("-", ["Été-x"]),
])
def test_plain_free_text_matches_what_one_ilike_per_field_matches(
        rows: Client, conn: psycopg.Connection[Any], text: str, expected: list[str]) -> None:
    expected = _expected(conn, text, expected)
    got = sorted(r.name for r in rows.reads.list_schedules(text))
    assert got == expected
    assert got == sorted(_per_field(conn, _like(text)))
    page = rows.reads.schedule_page(text, limit=100)
    assert (sorted(r.name for r in page.rows), page.matched) == (expected, len(expected))


@pytest.mark.parametrize(("source", "expected"), [
    ("bc", []),
    ("b*c", []),  # a wildcard inside: matched field by field, never across two
    ("a*d", []),
    ("é*x", ["Été-x"]),
    ('"y\x1fk"', []),
    ("ÉTÉ", ["Été-x"]),
    ("%_", ["100%_off"]),
    ("-ab", sorted(n for n, *_ in ROWS if n != "ab")),  # negated: an owner-less row is not excluded
    ("-ops", sorted(n for n, *_ in ROWS if n != "Été-x")),
])
def test_filter_free_text_matches_what_one_ilike_per_field_matches(
        rows: Client, conn: psycopg.Connection[Any], source: str, expected: list[str]) -> None:
    expected = _expected(conn, source, expected)
    got = sorted(r.name for r in rows.reads.list_schedules(where=parse(source)))
    assert got == expected
    (term,) = parse(source).terms
    oracle = _per_field(conn, like_pattern(term, GRAMMARS["schedules"]))
    assert got == (sorted(n for n, *_ in ROWS if n not in oracle) if term.negated else sorted(oracle))


def test_the_joined_form_is_chosen_only_where_it_is_exact() -> None:
    joined, per_field = _TEXT_JOINED.format(p="P"), _TEXT.format(p="P")
    assert text_sql("P", "%abc%") == joined
    assert text_sql("P", "%100\\%\\_off%") == joined  # escaped wildcards are text
    assert text_sql("P", "%a\\\\%") == joined  # an escaped backslash, then the closing %
    assert text_sql("P", "%a%c%") == per_field  # a wildcard inside
    assert text_sql("P", "%a_c%") == per_field
    assert text_sql("P", "%y\x1fk%") == per_field  # the separator
    assert text_sql("P", "abc") == per_field  # not a substring pattern
