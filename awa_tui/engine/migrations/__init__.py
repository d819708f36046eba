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

from awa_tui.engine.core.db import MIGRATION_LOCK_KEY, PROTOCOL_LOCK_KEY, connect, translate
from awa_tui.engine.core.errors import ReadOnly, SchemaError
from awa_tui.engine.migrations.detect import refuse_foreign_schema
from awa_tui.engine.migrations.history import EDITED, Renumbering, defines, renumbering_of, replayable

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


def _package_version() -> str:
    from awa_tui import __version__

    return __version__


# Tables a migration's own statements write or alter (besides the two every migration locks
# up front, _lock_in_enqueue_order): read from its text for `migrate --dry-run`.
_TOUCHES_RE = re.compile(
    r"\b(?:ALTER\s+TABLE|CREATE\s+(?:UNIQUE\s+)?INDEX\b[^;]*?\bON|CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\b[^;]*?\bON"
    r"|LOCK\s+TABLE|DROP\s+TABLE|UPDATE|DELETE\s+FROM|INSERT\s+INTO|TRUNCATE)"
    r"(?:\s+IF\s+(?:NOT\s+)?EXISTS)?(?:\s+ONLY)?\s+(awa\.[a-z_]+)", re.IGNORECASE)
_CREATES_RE = re.compile(r"\bCREATE\s+(?:UNLOGGED\s+)?TABLE(?:\s+IF\s+NOT\s+EXISTS)?\s+(awa\.[a-z_]+)", re.IGNORECASE)
ALWAYS_LOCKED = ("awa.cron_jobs", "awa.jobs")


@dataclass(frozen=True)
class Step:
    """A migration the runner would apply, and the existing tables it locks while it runs
    (awa.cron_jobs and awa.jobs always, ACCESS EXCLUSIVE: no fire and no claim meanwhile)."""

    version: int
    name: str
    locks: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"v{self.version:03d} {self.name}"


def step_of(migration: Migration) -> Step:
    text = migration.applied_sql()
    created = {m.lower() for m in _CREATES_RE.findall(text)}
    touched = [m.lower() for m in _TOUCHES_RE.findall(text)]
    locks = dict.fromkeys([*ALWAYS_LOCKED, *(t for t in touched if t not in created)])
    return Step(migration.version, migration.name, tuple(locks))


@dataclass(frozen=True)
class SchemaStatus:
    """The database's migrations against this code's: applied (under today's numbers),
    recorded under an old number, pending, and unknown (neither this code's nor in its
    history: a newer release's when numbered beyond this code's, otherwise refused)."""

    present: bool  # awa.schema_migrations exists
    code_version: int
    applied: tuple[tuple[int, str], ...]
    renumbered: tuple[Renumbering, ...]
    pending: tuple[Step, ...]
    unknown: tuple[tuple[int, str], ...]
    stale: tuple[Step, ...] = ()  # applied from a text since changed: replayed (history.EDITED)

    @property
    def newest(self) -> int | None:
        versions = [v for v, _ in self.applied] + [v for v, _ in self.unknown]
        return max(versions) if versions else None

    @property
    def ahead(self) -> tuple[tuple[int, str], ...]:
        """Migrations of a newer awa-tui."""
        return tuple(u for u in self.unknown if u[0] > self.code_version)

    @property
    def foreign(self) -> tuple[tuple[int, str], ...]:
        """Recorded migrations no awa-tui release ever had under that number."""
        return tuple(u for u in self.unknown if u[0] <= self.code_version)

    def mismatch(self) -> str | None:
        """One line when this database and this awa-tui disagree, naming what to do; None
        when it is exactly this code's schema."""
        mine = self.code_version
        if not self.present:
            return "the database has no awa schema; run `awa-tui migrate`"
        if self.foreign:
            return foreign_refusal(self.foreign)
        if self.ahead:
            return (f"this database is at schema {self.newest}, newer than this awa-tui {_package_version()} "
                    f"(which knows up to {mine}): upgrade awa-tui")
        if self.pending or self.renumbered or self.stale:
            newest = self.newest or 0
            if newest < mine:
                return (f"this database is at schema {newest}; this awa-tui {_package_version()} needs {mine}: "
                        "run `awa-tui migrate`")
            missing = ", ".join([step.label for step in self.pending]
                                + [f"{step.label} as it is today" for step in self.stale]) or "renumbered migrations"
            return f"this database lacks migrations this awa-tui needs ({missing}): run `awa-tui migrate`"
        return None


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)  # a name read from the database may hold control bytes
    return text if len(text) <= limit else text[: limit - 3] + "..."


def foreign_refusal(foreign: tuple[tuple[int, str], ...]) -> str:
    rows = ", ".join(f"v{v:03d} {_short(n)}" for v, n in foreign)
    return (f"awa.schema_migrations records {rows}, which no awa-tui release had: if a build of your own "
            "applied it, undo what it did and delete its row from awa.schema_migrations, then run "
            "`awa-tui migrate`; otherwise restore the database from a backup taken before it")


def read_status(conn: psycopg.Connection[Any]) -> SchemaStatus:
    """What the database recorded against this code's migrations (no write)."""
    mine = available()
    row = conn.execute("SELECT to_regclass('awa.schema_migrations') IS NOT NULL AS present").fetchone()
    if not row or not row["present"]:
        return SchemaStatus(False, mine[-1].version, (), (), tuple(step_of(m) for m in mine), ())
    recorded = conn.execute("SELECT version, name FROM awa.schema_migrations ORDER BY version").fetchall()
    current = {(m.version, m.name) for m in mine}
    applied: set[tuple[int, str]] = set()
    renumbered, unknown = [], []
    for r in recorded:
        key = (r["version"], r["name"])
        if key in current:
            applied.add(key)
        elif (renumbering := renumbering_of(*key)) is not None:
            renumbered.append(renumbering)
            applied.add((renumbering.current, renumbering.name))
        else:
            unknown.append(key)
    pending = tuple(step_of(m) for m in mine if (m.version, m.name) not in applied)
    stale = tuple(step_of(m) for m in mine if (m.version, m.name) in applied and (m.version, m.name) in EDITED
                  and conn.execute(EDITED[(m.version, m.name)]).fetchone()["stale"])  # type: ignore[index]
    return SchemaStatus(True, mine[-1].version, tuple(sorted(applied)), tuple(renumbered), pending, tuple(unknown),
                        stale)


def status_at(dsn: str) -> SchemaStatus:
    conn = connect(dsn, application_name="awa-tui migrate")
    try:
        return read_status(conn)
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def current_version(conn: psycopg.Connection[Any]) -> int | None:
    """The newest migration the database recorded, or None when awa was never migrated there."""
    row = conn.execute("SELECT to_regclass('awa.schema_migrations') IS NOT NULL AS present").fetchone()
    if not row or not row["present"]:
        return None
    row = conn.execute("SELECT max(version) AS v FROM awa.schema_migrations").fetchone()
    return row["v"] if row else None


def check_version(conn: psycopg.Connection[Any]) -> int:
    """Raise a one-line error unless the database has exactly this code's migrations."""
    found = read_status(conn)
    line = found.mismatch()
    if line is not None:
        raise SchemaError(line)
    return found.code_version


def window_refusal(conn: psycopg.Connection[Any], found: SchemaStatus, protocol: int) -> str | None:
    """Why a runtime of `protocol` may not run on this newer schema (its release policy's
    lowest runtime protocol is above it), in one line; None when it may, or the schema is not
    newer. A schema without a policy (before v019) admits every runtime."""
    if not found.ahead:
        return None
    row = conn.execute("SELECT to_regclass('awa.release_policy') IS NOT NULL AS present").fetchone()
    if not row or not row["present"]:
        return None
    policy = conn.execute("SELECT min_runtime_protocol FROM awa.release_policy WHERE singleton").fetchone()
    if policy is None or policy["min_runtime_protocol"] <= protocol:
        return None
    return (f"this database is at schema {found.newest}, which needs runtime protocol "
            f"{policy['min_runtime_protocol']}; this awa-tui {_package_version()} speaks {protocol}: upgrade awa-tui")


# The first migration that ships its undoing: the ones before it are forward-only.
FIRST_WITH_DOWN = 19


def down_sql(migration: Migration) -> str | None:
    """The text undoing `migration` (down/<its file name>), or None when it has none."""
    target = resources.files(__package__).joinpath("down", migration.file_name)
    return target.read_text("utf-8") if target.is_file() else None


def migrate_down(dsn: str, to: int) -> list[int]:
    """Undo every applied migration above `to`, newest first, each in its own transaction
    under the migration lock; refused before anything runs when one has no undoing (only
    migrations from v019 on ship one). Returns the versions undone."""
    conn = connect(dsn, application_name="awa-tui migrate")
    try:
        found = read_status(conn)
        if found.unknown:
            raise SchemaError(f"{found.mismatch()}: migrate down with the awa-tui that applied them")
        by_version = {m.version: m for m in available()}
        undo = [by_version[v] for v, _ in sorted(found.applied, reverse=True) if v > to]
        texts = [down_sql(m) for m in undo]
        missing = [m for m, text in zip(undo, texts, strict=True) if text is None]
        if missing:
            raise SchemaError(f"cannot migrate down to {to}: v{missing[0].version:03d} {missing[0].name} has no "
                              f"undoing (only v{FIRST_WITH_DOWN:03d} and later do); restore a backup instead")
        done = []
        for migration, text in zip(undo, texts, strict=True):
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                _lock_in_enqueue_order(conn)
                try:
                    conn.execute(text)  # type: ignore[arg-type]  # trusted file
                except psycopg.Error as exc:
                    raise SchemaError(f"undoing v{migration.version:03d} {migration.name} failed: "
                                      f"{translate(exc)}; the database stays at it") from None
                conn.execute("DELETE FROM awa.schema_migrations WHERE version = %s", (migration.version,))
            done.append(migration.version)
        return done
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def set_leader_floor(dsn: str, protocol: int) -> int:
    """The lowest runtime protocol that may lead (`migrate --leaders-from`): lowered to let an
    older release lead again before a rollback, raised back after. Returns the previous one."""
    conn = connect(dsn, application_name="awa-tui migrate")
    try:
        with conn.transaction():
            row = conn.execute("SELECT min_leader_protocol FROM awa.release_policy WHERE singleton FOR UPDATE"
                               ).fetchone()
            if row is None:
                raise SchemaError("this database has no release policy yet; run `awa-tui migrate`")
            conn.execute("UPDATE awa.release_policy SET min_leader_protocol = %s, updated_at = now() "
                         "WHERE singleton", (protocol,))
            return int(row["min_leader_protocol"])
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def mismatch(conn: psycopg.Connection[Any]) -> str | None:
    """The one line saying how the database's schema differs from this code's (None: it
    does not). Connections call it when a statement met a missing table, column or function,
    so a command on a database behind or ahead says so instead of quoting SQL."""
    return read_status(conn).mismatch()


def migrate(dsn: str) -> list[int]:
    """Apply every migration the database lacks, in order, each in its own transaction under
    the migration lock; migrations recorded under an old number are recorded under today's
    first. Returns the versions applied (maybe none). A failing migration names itself and
    leaves the database at the last one that succeeded."""
    from awa_tui.engine.core.standby import standby_refusal

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
            found = read_status(conn)
            if found.foreign:
                raise SchemaError(foreign_refusal(found.foreign))
            if found.ahead:
                raise SchemaError(found.mismatch() or "")
            _record_renumbered(conn, found.renumbered)
        plan = _sequence(found)
        applied: list[int] = []
        for migration, text, replay in plan:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                # A concurrent migrator may have applied it since: each one is applied once.
                done = conn.execute("SELECT 1 FROM awa.schema_migrations WHERE version = %s AND name = %s",
                                    (migration.version, migration.name)).fetchone()
                if done and not replay:
                    continue
                _lock_in_enqueue_order(conn)
                try:
                    conn.execute(text)  # type: ignore[arg-type]  # trusted file
                except psycopg.Error as exc:
                    last = f"v{applied[-1]:03d}" if applied else "the migrations it had"
                    what = "replayed after the migrations filled in beneath it, " if replay else ""
                    raise SchemaError(
                        f"v{migration.version:03d} {migration.name} {what}failed: {translate(exc)}; nothing of it "
                        f"was applied and the database stays at {last} (`awa-tui migrate status` lists them)"
                    ) from None
                if not replay:
                    conn.execute("INSERT INTO awa.schema_migrations (version, name) VALUES (%s, %s)",
                                 (migration.version, migration.name))
            if not replay:
                applied.append(migration.version)
        return applied
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()


def _sequence(found: SchemaStatus) -> list[tuple[Migration, str, bool]]:
    """What to run, in version order: each pending migration, and each applied one that must
    be replayed because a migration filled in beneath it redefined one of its functions or
    triggers (history.py says why). (migration, text, replayed?); every text is made before
    anything runs, so a missing include or a migration that cannot be replayed fails first."""
    pending = {step.version for step in found.pending}
    stale = {step.version for step in found.stale}
    applied = {version for version, _ in found.applied}
    newest = max(applied, default=0)
    filled: set[str] = set()
    out: list[tuple[Migration, str, bool]] = []
    for migration in available():
        if migration.version in pending:
            text = migration.applied_sql()
            if migration.version < newest:  # beneath one the database already has
                filled |= defines(text)
            out.append((migration, text, False))
        elif migration.version in stale or (migration.version in applied and filled
                                             and defines(migration.applied_sql()) & filled):
            replay = replayable(migration.applied_sql())
            if replay is None:
                raise SchemaError(
                    f"this database needs {migration.file_name[:-4]} run again as it is today, which cannot be: "
                    "restore a backup taken before it and migrate that")
            out.append((migration, replay, True))
    return out


def _record_renumbered(conn: psycopg.Connection[Any], renumbered: tuple[Renumbering, ...]) -> None:
    """Migrations recorded under an old number, recorded under today's (their applied_at
    kept): every old row goes first, so one that took another's number frees it."""
    moved = []
    for r in renumbered:
        row = conn.execute("DELETE FROM awa.schema_migrations WHERE version = %s AND name = %s RETURNING applied_at",
                           (r.recorded, r.name)).fetchone()
        moved.append((r, row["applied_at"] if row else None))
    for r, applied_at in moved:
        conn.execute("INSERT INTO awa.schema_migrations (version, name, applied_at) "
                     "VALUES (%s, %s, coalesce(%s, now())) ON CONFLICT (version) DO NOTHING",
                     (r.current, r.name, applied_at))


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
