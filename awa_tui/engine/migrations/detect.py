"""Tell apart awa-tui's own schema, upstream Awa's (awa-pg), and neither.

- awa-tui records its migrations in awa.schema_migrations (version, name, applied_at),
  with the names of the files in awa_tui/engine/migrations.
- upstream Awa records its migrations in awa.schema_version (version, description,
  applied_at) (its migrator reads max(version) from there) and never creates
  awa.schema_migrations.

Relations are looked up in pg_class/pg_namespace, never with to_regclass(): those catalog
reads need no privilege on the schema, so a role without USAGE on `awa` still gets an
answer instead of "permission denied".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import psycopg

from awa_tui.engine.core.db import connect, translate
from awa_tui.engine.core.errors import SchemaError
from awa_tui.engine.migrations.history import renumbering_of

SchemaKind = Literal["awa-tui", "upstream", "none"]


@dataclass(frozen=True)
class SchemaInfo:
    """What owns the `awa` schema of a database, read from its own version table."""

    kind: SchemaKind
    version: int | None  # the newest migration recorded; None when there is no schema
    detail: str  # one line, for headers and error messages



# A table (plain or partitioned) of the awa schema, by name.
_TABLE = """EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'awa' AND c.relname = '{name}' AND c.relkind IN ('r', 'p'))"""

CATALOG_SQL = f"""
SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'awa') AS has_schema,
       {_TABLE.format(name="schema_migrations")} AS has_ours,
       {_TABLE.format(name="schema_version")} AS has_upstream,
       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'awa' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
           AND c.relname <> 'schema_migrations') AS other_relations
"""

UPSTREAM_TABLE_SQL = f"SELECT {_TABLE.format(name='schema_version')} AS has_upstream"


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)  # repr: a name read from the database may hold control bytes
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ours(conn: psycopg.Connection[Any]) -> tuple[list[dict[str, Any]], str | None]:
    """awa.schema_migrations rows, and why they are not awa-tui's (None if they are)."""
    # Imported here: the migration runner imports this module to refuse foreign schemas.
    from awa_tui.engine.migrations import available

    rows = conn.execute("SELECT version, name FROM awa.schema_migrations ORDER BY version").fetchall()
    known = {m.version: m.name for m in available()}
    for row in rows:
        expected = known.get(row["version"])
        # A version beyond ours is a newer awa-tui (the runner refuses it by itself); a known
        # version under another name was not written by awa-tui.
        if expected is not None and row["name"] != expected and renumbering_of(row["version"], row["name"]) is None:
            return rows, (f"awa.schema_migrations records v{row['version']} as {_short(row['name'])}, "
                          f"not awa-tui's {expected!r}")
    return rows, None


def has_upstream_table(conn: psycopg.Connection[Any]) -> bool:
    """Whether the `awa` schema has upstream's version table: detect_schema says "upstream"
    only then, so without it (awa-tui's own schema, or none) one catalog read decides."""
    row = conn.execute(UPSTREAM_TABLE_SQL).fetchone()
    assert row is not None
    return bool(row["has_upstream"])


def detect_schema(conn: psycopg.Connection[Any]) -> SchemaInfo:
    """What owns this database's `awa` schema (reads only)."""

    cat = conn.execute(CATALOG_SQL).fetchone()
    assert cat is not None
    if not cat["has_schema"]:
        return SchemaInfo("none", None, "no awa schema")
    ours: list[dict[str, Any]] = []
    foreign_note: str | None = None
    if cat["has_ours"]:
        ours, foreign_note = _ours(conn)
        if ours and foreign_note is None:
            version = max(r["version"] for r in ours)
            return SchemaInfo("awa-tui", version, f"awa-tui schema version {version} (awa.schema_migrations)")
    if cat["has_upstream"]:
        row = conn.execute(
            "SELECT version, description FROM awa.schema_version ORDER BY version DESC LIMIT 1"
        ).fetchone()
        version = row["version"] if row else None
        detail = (f"upstream Awa (awa-pg) schema version {version} (awa.schema_version)" if row
                  else "upstream Awa (awa-pg) schema with an empty awa.schema_version")
        if cat["has_ours"] and not ours:
            # An awa-tui `migrate` before the refusal existed created this table and failed.
            detail += "; an empty awa.schema_migrations left by an earlier awa-tui migrate"
        return SchemaInfo("upstream", version, detail)
    if foreign_note is not None:
        return SchemaInfo("none", None, f"awa schema of unknown origin: {foreign_note}")
    if cat["other_relations"]:
        return SchemaInfo(
            "none", None,
            f"awa schema of unknown origin: {cat['other_relations']} relations and no version table "
            "(neither awa.schema_migrations nor awa.schema_version)",
        )
    return SchemaInfo("none", None, "an empty awa schema")


def detect_at(dsn: str) -> SchemaInfo:
    """detect_schema on a connection of its own (the console's start-up, before it picks a backend)."""
    try:
        conn = connect(dsn, application_name="awa-tui detect")
    except psycopg.Error as exc:
        raise translate(exc) from None
    try:
        return detect_schema(conn)
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def label(info: SchemaInfo) -> str:
    """The console header's words for a schema: which, and its version."""
    if info.kind == "upstream":
        return f"upstream Awa schema v{info.version}"
    if info.kind == "awa-tui":
        return f"awa-tui schema v{info.version}"
    return "no awa schema"


def refuse_foreign_schema(conn: psycopg.Connection[Any]) -> SchemaInfo:
    """Raise SchemaError (one line) unless awa-tui may create or migrate the awa schema here.

    Called by the migration runner before it writes anything: an upstream Awa schema, or
    any awa schema awa-tui did not create, is left exactly as it is.
    """
    info = detect_schema(conn)
    if info.kind == "upstream":
        raise SchemaError(
            f"refusing to migrate: this database holds an {info.detail}; awa-tui migrations would "
            "damage it (operate it in upstream mode, or give awa-tui its own database)"
        )
    if info.kind == "none" and info.detail.startswith("awa schema of unknown origin"):
        raise SchemaError(f"refusing to migrate: {info.detail}; awa-tui leaves a schema it did not create alone")
    return info
