"""Versioned, forward-only migrations (S4, S35).

Files are `vNNN_name.sql` beside this module. The runner serialises concurrent callers
with a transaction advisory lock taken in each of its transactions (never a session lock:
through a transaction pooler it would stay behind on a pooled server session, S57),
records each version in `awa.schema_migrations`, and refuses a database whose recorded
version is newer than the newest file here.

A migration that (re)defines a function keeps the function's body in one file under
`functions/` and names it on a line of its own, `-- include: functions/<name>.sql`: the
line is replaced by that file's text when the migration is applied (functions/README.md).
Only the version and name of an applied migration are recorded, never its text, so an
include changes nothing for a database that already applied it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import psycopg

from awa_tui.engine.db import MIGRATION_LOCK_KEY, PROTOCOL_LOCK_KEY, connect, translate
from awa_tui.engine.errors import ReadOnly, SchemaError
from awa_tui.engine.upstream.detect import refuse_foreign_schema

_FILE_RE = re.compile(r"^v(\d{3})_([a-z0-9_]+)\.sql$")
INCLUDE_RE = re.compile(r"^--\s*include:\s*(.*?)\s*$", re.MULTILINE)
_INCLUDE_PATH_RE = re.compile(r"^functions/[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    root: Traversable | None = None  # where its includes live; None: this package

    @property
    def file_name(self) -> str:
        return f"v{self.version:03d}_{self.name}.sql"

    def included(self, path: str) -> str:
        """The text of the file an include line names, or a one-line error."""
        if not _INCLUDE_PATH_RE.match(path):
            raise SchemaError(f"migration {self.file_name}: `-- include: {path}` must name functions/<name>.sql")
        folder = self.root if self.root is not None else resources.files(__package__)
        target = folder.joinpath(*path.split("/"))
        if not target.is_file():
            raise SchemaError(f"migration {self.file_name}: included file {path} does not exist")
        return target.read_text("utf-8")

    def applied_sql(self) -> str:
        """The text run against the database: each include line replaced by its file."""
        return INCLUDE_RE.sub(lambda match: self.included(match.group(1)), self.sql)


def available() -> list[Migration]:
    out = []
    for entry in resources.files(__package__).iterdir():
        match = _FILE_RE.match(entry.name)
        if match:
            out.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    out.sort(key=lambda m: m.version)
    return out


def code_version() -> int:
    return available()[-1].version


def current_version(conn: psycopg.Connection[Any]) -> int | None:
    """The database's schema version, or None when awa was never migrated there."""
    row = conn.execute("SELECT to_regclass('awa.schema_migrations') IS NOT NULL AS present").fetchone()
    if not row or not row["present"]:
        return None
    row = conn.execute("SELECT max(version) AS v FROM awa.schema_migrations").fetchone()
    return row["v"] if row else None


def check_version(conn: psycopg.Connection[Any]) -> int:
    """Raise a clear error unless the database is exactly at this code's version."""
    db_version = current_version(conn)
    mine = code_version()
    if db_version is None:
        raise SchemaError("the database has no awa schema; run `awa-tui migrate`")
    if db_version > mine:
        raise SchemaError(
            f"the database schema is version {db_version}, newer than this awa-tui "
            f"(knows up to {mine}); upgrade awa-tui"
        )
    if db_version < mine:
        raise SchemaError(f"the database schema is version {db_version}, expected {mine}; run `awa-tui migrate`")
    return db_version


def migrate(dsn: str) -> list[int]:
    """Apply every pending migration; returns the versions applied (maybe none)."""
    from awa_tui.engine.standby import standby_refusal

    conn = connect(dsn, application_name="awa-tui migrate")
    try:
        refusal = standby_refusal(conn)  # S58: a standby is migrated by replaying its primary
        if refusal is not None:
            raise ReadOnly(refusal)
        with conn.transaction():
            # Serialise concurrent migrators (each transaction takes the lock again).
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            # Before anything is written: an upstream Awa (or unknown) awa schema is left alone.
            refuse_foreign_schema(conn)
            conn.execute("CREATE SCHEMA IF NOT EXISTS awa")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS awa.schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            db_version = current_version(conn) or 0
        mine = code_version()
        if db_version > mine:
            raise SchemaError(
                f"the database schema is version {db_version}, newer than this awa-tui "
                f"(knows up to {mine}); upgrade awa-tui"
            )
        pending = [m for m in available() if m.version > db_version]
        texts = [m.applied_sql() for m in pending]  # a missing include fails before anything runs
        applied = []
        for migration, text in zip(pending, texts, strict=True):
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                # A concurrent migrator may have applied it since: versions only move up,
                # and each one is applied once, in order.
                if (current_version(conn) or 0) >= migration.version:
                    continue
                _lock_in_enqueue_order(conn)
                conn.execute(text)  # type: ignore[arg-type]  # trusted file
                conn.execute(
                    "INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
            applied.append(migration.version)
        return applied
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def _lock_in_enqueue_order(conn: psycopg.Connection[Any]) -> None:
    """S35: lock cron_jobs before jobs, the order the atomic enqueue takes them.

    The protocol lock comes first: every writer of owner state takes it before any table
    (S32), and some then read cron_jobs while holding an owners row, so a migration that
    also alters or adds a trigger to awa.owners (v006) would otherwise deadlock with them.

    A migration that touches both tables then waits behind a live fire instead of
    deadlocking with it. The locks are taken at the strongest mode up front: a weaker
    one that the migration later upgrades (any ALTER TABLE) deadlocks with a fire that
    already holds the RowShare lock of its FOR UPDATE step and waits for the migration.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROTOCOL_LOCK_KEY,))
    row = conn.execute(
        "SELECT to_regclass('awa.cron_jobs') IS NOT NULL AS c, to_regclass('awa.jobs') IS NOT NULL AS j"
    ).fetchone()
    if row and row["c"]:
        conn.execute("LOCK TABLE awa.cron_jobs IN ACCESS EXCLUSIVE MODE")
    if row and row["j"]:
        conn.execute("LOCK TABLE awa.jobs IN ACCESS EXCLUSIVE MODE")
