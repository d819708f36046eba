"""Connections, error translation and transaction contexts.

Every thread of a runtime gets its own connection (psycopg connections are not shared
across threads mid-transaction); a broken connection is dropped and reopened on next use.
"""

from __future__ import annotations

import inspect
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import errors as pgerrors
from psycopg.rows import dict_row, tuple_row

from awa_tui.engine.core import errors

# Advisory lock keys (one 64-bit key space, ours is the 'awa' prefix).
LEADER_LOCK_KEY = 0x617761_0001
MIGRATION_LOCK_KEY = 0x617761_0002
PROTOCOL_LOCK_KEY = 0x617761_0003
# Transaction-scoped: the runtime recording a change of the fleet's health (S70).
FLEET_WATCH_LOCK_KEY = 0x617761_0004

CONNECT_TIMEOUT_S = 5
# Client-side TCP liveness (libpq ignores it on Unix sockets): a connection whose peer went
# silent fails within ~10 s instead of hanging until the OS gives up (~15 min). A value
# given in the DSN wins.
TCP_LIVENESS = {
    "keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3",
    "tcp_user_timeout": "10000",
}

_PASSWORD_KV = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_PASSWORD_URL = re.compile(r"(://[^:/@\s]*:)([^@\s]*)(@)")


def redact(text: str) -> str:
    """Remove passwords from a DSN or from any message that may quote one."""
    text = _PASSWORD_URL.sub(r"\1***\3", text)
    return _PASSWORD_KV.sub(r"\1***", text)


# libpq's parse errors quote the offending text, which may be the password: we say only
# what kind of mistake it is (matched on the message's fixed start).
_PARSE_REASONS = (
    ("invalid percent-encoded token", "an invalid percent-encoded token (% must be followed by two hex digits)"),
    ("unexpected spaces found", "unexpected spaces (percent-encode them as %20)"),
    ("unterminated quoted string", "an unterminated quoted string"),
    ("missing \"=\" after", "a word without \"=\" in the key=value form"),
    ("invalid connection option", "an unknown connection option"),
    ("invalid URI query parameter", "an unknown query parameter"),
    ("extra key/value separator", "an extra \"=\" in a query parameter"),
    ("end of string reached when looking for matching", "an unclosed \"[\" around an IPv6 address"),
)
MISPARSED_CREDENTIALS = "a '/' or '@' in the user name or password must be percent-encoded (%2F, %40)"
UNPARSEABLE = "(database URL that could not be parsed)"


def _misparsed_credentials(dsn: str) -> bool:
    """A URL whose user name or password holds a raw '/' or '@': libpq splits it at the
    wrong place and the secret's pieces would become the host, port or database name."""
    if not dsn.startswith(("postgresql://", "postgres://")):
        return False
    rest = dsn.split("://", 1)[1]
    authority, slash, path = rest.partition("/")  # libpq: credentials end at the first '@' before '/'
    if authority.count("@") > 1:
        return True
    return "@" not in authority and bool(slash) and "@" in path.partition("?")[0]


def dsn_problem(dsn: str) -> str | None:
    """Why `dsn` cannot be used, in words that quote none of it; None when it parses."""
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        message = str(exc).strip()
        for start, reason in _PARSE_REASONS:
            if message.startswith(start):
                return reason
        return "invalid syntax"
    if _misparsed_credentials(dsn):
        return MISPARSED_CREDENTIALS
    return None


def check_dsn(dsn: str) -> None:
    """Raise a one-line ValidationError, quoting nothing of `dsn`, when it cannot be parsed."""
    problem = dsn_problem(dsn)
    if problem is not None:
        raise errors.ValidationError(f"the database URL could not be parsed: {problem}")


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def describe_dsn(dsn: str) -> str:
    """A short, password-free description of where a DSN points (for headers, logs).

    Built only from the parsed host, port, database and user; a DSN that does not parse
    cleanly is described without any of its text.
    """
    if dsn_problem(dsn) is not None:
        return UNPARSEABLE
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    hosts = str(info.get("host") or "local socket").split(",")
    ports = str(info.get("port") or "").split(",")
    if len(ports) == 1:  # libpq: one port serves every host
        ports *= len(hosts)
    db = info.get("dbname") or info.get("user") or ""
    user = str(info["user"]) if info.get("user") else None
    # A multi-host DSN (failover, S58) lists each host with its own port: a,b 1,2 -> a:1,b:2.
    padded: list[str] = ports + [""] * (len(hosts) - len(ports))
    where = ",".join(f"{h}:{p}" if p and not h.startswith("/") else h for h, p in zip(hosts, padded, strict=False))
    return _printable(f"{user + '@' if user else ''}{where}/{db}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else type(exc).__name__


# What a statement meets on a schema older (or newer) than the code that wrote it.
SCHEMA_ERRORS = (pgerrors.UndefinedTable, pgerrors.InvalidSchemaName, pgerrors.UndefinedFunction,
                 pgerrors.UndefinedColumn)
# Given a connection, one line saying how the database's schema differs from the code's, or
# None. The migrations room provides it (core cannot import it); a Client passes it in.
Explain = Callable[[psycopg.Connection[Any]], str | None]
_ATTEMPT = re.compile(r"^- host: '([^']*)', port: '([^']*)'.*failed: (.*)$")


def _connect_failure(exc: BaseException) -> str:
    """Why the connection failed; for a multi-host URL, every host's reason (libpq's first
    line names only the last host tried: a standby's refusal hid the dead primary's)."""
    attempts = [m.groups() for line in str(exc).splitlines() if (m := _ATTEMPT.match(line.strip()))]
    if len(attempts) < 2:
        return _first_line(exc)
    return redact("every host failed: " + "; ".join(f"{host}:{port} {reason}" for host, port, reason in attempts))


def translate(exc: BaseException) -> errors.AwaError:
    """Map a psycopg error to an error users can read."""
    if isinstance(exc, errors.AwaError):
        return exc
    if isinstance(exc, pgerrors.InsufficientPrivilege):
        if "row-level security" in str(exc):  # a team's role (S76) writing another owner's row
            return errors.ReadOnly("permission denied: that row belongs to an owner your role may not act on")
        return errors.ReadOnly(f"permission denied: {_first_line(exc)}")
    if isinstance(exc, pgerrors.ReadOnlySqlTransaction):
        return errors.ReadOnly(f"the database is read-only: {_first_line(exc)}")
    if isinstance(exc, SCHEMA_ERRORS):
        return errors.SchemaError(
            f"the awa schema is missing or incomplete; run `awa-tui migrate` ({_first_line(exc)})")
    if isinstance(exc, pgerrors.RaiseException) and "retired" in str(exc):
        return errors.Conflict(_first_line(exc))
    if isinstance(exc, pgerrors.NoDataFound):
        return errors.NotFound(_first_line(exc))
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        if STATEMENT_POOLING in str(exc):  # S57
            return errors.DatabaseUnavailable(
                "the connection pooler in front of the database is in statement pooling mode, which refuses the "
                "transactions awa-tui needs: use its transaction or session mode")
        return errors.DatabaseUnavailable(f"database unavailable: {_first_line(exc)}")
    if isinstance(exc, psycopg.Error):
        return errors.AwaError(f"database error: {_first_line(exc)}")
    return errors.AwaError(_first_line(exc))


def connect(
    dsn: str, *, application_name: str = "awa-tui", autocommit: bool = True, read_only: bool = False
) -> psycopg.Connection[Any]:
    """Open one connection with our defaults, or raise DatabaseUnavailable.

    A read-only connection makes every transaction read-only in the server itself, so a
    read-only client cannot write even through a code path that forgot to check.
    """
    extra = {"options": "-c default_transaction_read_only=on"} if read_only else {}
    problem = dsn_problem(dsn)
    if problem is not None:  # libpq's own message would quote the DSN's text
        raise errors.DatabaseUnavailable(f"cannot connect: the database URL could not be parsed: {problem}")
    given = psycopg.conninfo.conninfo_to_dict(dsn)
    extra.update({k: v for k, v in TCP_LIVENESS.items() if k not in given})
    try:
        conn: psycopg.Connection[Any] = psycopg.connect(
            dsn,
            autocommit=autocommit,
            application_name=application_name,
            connect_timeout=CONNECT_TIMEOUT_S,
            row_factory=dict_row,  # type: ignore[arg-type]
            **extra,  # type: ignore[arg-type]
        )
    except psycopg.Error as exc:
        if read_only and POOLER_REFUSED_OPTIONS in str(exc):
            raise PoolerRefusedOptions(f"cannot connect to {describe_dsn(dsn)}: {_first_line(exc)}") from None
        raise errors.DatabaseUnavailable(
            f"cannot connect to {describe_dsn(dsn)}: {_connect_failure(exc)}"
        ) from None
    try:
        if behind_pooler(conn):
            # S57: a transaction pooler runs the next statement on any server session, where
            # a statement psycopg prepared on another one does not exist: never prepare.
            conn.prepare_threshold = None
    except psycopg.Error as exc:
        _close_quietly(conn)
        raise translate(exc) from None
    return conn


# PgBouncer refuses the startup parameter that makes a session read-only (S57), and in
# statement mode every transaction block.
POOLER_REFUSED_OPTIONS = "unsupported startup parameter: options"
STATEMENT_POOLING = "transaction blocks not allowed in statement pooling mode"


class PoolerRefusedOptions(errors.DatabaseUnavailable):
    """A pooler in front of the server refused a read-only session's startup setting."""


def server_pid(conn: psycopg.Connection[Any]) -> int:
    """The pid of the server session that runs this connection's statement now."""
    with conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute("SELECT pg_backend_pid()", prepare=False).fetchone()
    assert row is not None
    return int(row[0])


def behind_pooler(conn: psycopg.Connection[Any]) -> bool:
    """Whether a pooler sits between this connection and the server (S57).

    The server announces its session's pid when a connection opens; a pooler answers that
    itself, with a pid of its own making (it routes cancel requests), and then hands the
    connection a session of the server whose real pid differs."""
    return conn.info.backend_pid != server_pid(conn)


class AppPool(Protocol):
    """The application's own pool (psycopg_pool.ConnectionPool's two methods): its connections
    are borrowed for each call and given back, instead of ones the engine opens itself."""

    def getconn(self, timeout: float | None = None) -> psycopg.Connection[Any]: ...

    def putconn(self, conn: psycopg.Connection[Any]) -> None: ...


def check_app_pool(pool: object) -> AppPool:
    """`pool` if it lends connections as psycopg_pool.ConnectionPool does, else one line."""
    if not (callable(getattr(pool, "getconn", None)) and callable(getattr(pool, "putconn", None))):
        raise errors.ValidationError(
            f"pool: expected a psycopg_pool.ConnectionPool (getconn and putconn), got {type(pool).__name__}")
    if inspect.iscoroutinefunction(pool.getconn):  # type: ignore[attr-defined]
        raise errors.ValidationError("pool: an AsyncConnectionPool cannot lend to the engine's threads; "
                                     "pass a psycopg_pool.ConnectionPool")
    return pool  # type: ignore[return-value]


class ConnectionSource:
    """A small pool: idle connections are reused LIFO, broken ones dropped and reopened.

    No thread affinity, so short-lived threads (console workers) never leak connections;
    each loop of a runtime holds one connection only for the duration of a call. Given the
    application's pool (`app_pool`), each call borrows one of its connections instead, set up
    as the engine needs it (autocommit, rows as dicts) and put back as it came.
    """

    MAX_IDLE = 8

    def __init__(self, dsn: str, application_name: str, *, read_only: bool = False,
                 explain: Explain | None = None, app_pool: AppPool | None = None) -> None:
        self.dsn = dsn
        self.explain = explain
        self.application_name = application_name
        self.read_only = read_only
        self.app_pool = app_pool
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._closed = False
        # Behind a pooler that refuses the read-only startup setting, a read-only source
        # makes each call one READ ONLY transaction: the server still refuses every write.
        # The app's connections were opened without the setting: the same applies.
        self._read_only_per_transaction = read_only and app_pool is not None
        self._borrowed: dict[int, tuple[bool, Any, Any]] = {}  # id -> the app's autocommit, row factory, prepare
        # Whether a pooler sits before each of the app's connections: asked once per connection
        # (a round trip), not at every borrow on the runtime's loops.
        self._behind_pooler: weakref.WeakKeyDictionary[psycopg.Connection[Any], bool] = weakref.WeakKeyDictionary()
        # Per thread, the backend pid of the connection it uses now: a console asks, on
        # another connection, what its stuck refresh waits on (S75). No round trip: the pid
        # the server announced at connect (behind a pooler, the pooler's own: nothing found).
        self._busy: dict[int, int] = {}

    def _borrow(self, pool: AppPool) -> psycopg.Connection[Any]:
        try:
            conn = pool.getconn()
        except psycopg.Error as exc:  # the pool's own timeout (PoolTimeout) or a failed connect
            raise errors.DatabaseUnavailable(f"cannot borrow a connection from the application's pool: "
                                             f"{_first_line(exc)}") from None
        state = (conn.autocommit, conn.row_factory, conn.prepare_threshold)
        try:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()  # a connection lent with a transaction open is not ours to commit
            conn.autocommit = True
            conn.row_factory = dict_row  # type: ignore[assignment]
            pooled = self._behind_pooler.get(conn)
            if pooled is None:
                pooled = self._behind_pooler.setdefault(conn, behind_pooler(conn))
            if pooled:
                conn.prepare_threshold = None  # S57, as for the engine's own connections
        except psycopg.Error as exc:
            pool.putconn(conn)
            raise translate(exc) from None
        with self._lock:
            self._borrowed[id(conn)] = state
        return conn

    def _give_back(self, pool: AppPool, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            state = self._borrowed.pop(id(conn), None)
        if state is not None and not conn.closed and not conn.broken:
            try:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
                conn.autocommit, conn.row_factory, conn.prepare_threshold = state
            except psycopg.Error:
                _close_quietly(conn)  # the pool drops a closed connection and opens another
        pool.putconn(conn)

    def _checkout(self) -> psycopg.Connection[Any]:
        if self.app_pool is not None:
            return self._borrow(self.app_pool)
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed and not conn.broken:
                    return conn
        if self.read_only and not self._read_only_per_transaction:
            try:
                return connect(self.dsn, application_name=self.application_name, read_only=True)
            except PoolerRefusedOptions:
                # S57: through PgBouncer every call runs in a READ ONLY transaction instead.
                self._read_only_per_transaction = True
        return connect(self.dsn, application_name=self.application_name)

    def _checkin(self, conn: psycopg.Connection[Any]) -> None:
        if self.app_pool is not None:
            self._give_back(self.app_pool, conn)
            return
        reusable = (
            not conn.closed
            and not conn.broken
            and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
        with self._lock:
            if reusable and not self._closed and len(self._idle) < self.MAX_IDLE:
                self._idle.append(conn)
                return
        _close_quietly(conn)

    def _discard(self, conn: psycopg.Connection[Any]) -> None:
        """A connection a failed call leaves in doubt: closed; the app's goes back to its pool
        (which drops a closed one and opens another), never kept from it."""
        _close_quietly(conn)
        if self.app_pool is not None:
            self._give_back(self.app_pool, conn)

    def busy_pid(self, thread_id: int) -> int | None:
        """The backend pid of the connection thread `thread_id` is using now, if any."""
        return self._busy.get(thread_id)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """Yield a connection (autocommit); errors come out translated."""
        conn = self._checkout()
        # Each thread writes only its own key (a dict's get and set are atomic), so no lock:
        # this runs at every borrow of the runtime's loops, where the pool's lock is busy.
        thread = threading.get_ident()
        outer = self._busy.get(thread)  # a call nested in another on this thread
        self._busy[thread] = conn.info.backend_pid
        try:
            if self._read_only_per_transaction:
                conn.read_only = True
                with conn.transaction():
                    yield conn
            else:
                yield conn
        except psycopg.Error as exc:
            refusal = _standby_refusal(conn) if isinstance(exc, pgerrors.ReadOnlySqlTransaction) else None
            self._discard(conn)
            if refusal is not None:
                raise errors.ReadOnly(refusal) from None
            explained = self._explained() if isinstance(exc, SCHEMA_ERRORS) else None
            if explained is not None:
                raise errors.SchemaError(explained) from None
            raise translate(exc) from None
        except UnicodeEncodeError as exc:
            # Text Postgres cannot store (invalid UTF-8 bytes in argv arrive as lone
            # surrogates): refused before anything was sent, the connection stays usable.
            self._checkin(conn)
            text = repr(exc.object)
            raise errors.ValidationError(
                f"not valid Unicode text: {text if len(text) <= 60 else text[:57] + '...'}"
            ) from None
        except BaseException:
            self._checkin(conn)  # our own errors (NotFound...) leave the connection usable
            raise
        else:
            self._checkin(conn)
        finally:
            if outer is None:
                self._busy.pop(thread, None)
            else:
                self._busy[thread] = outer

    def _explained(self) -> str | None:
        """The schema's difference from the code's, in one line, read on a connection of its
        own (the failed one is gone); None when there is none or it cannot be read."""
        if self.explain is None:
            return None
        try:
            conn = connect(self.dsn, application_name=self.application_name)
        except errors.AwaError:
            return None
        try:
            return self.explain(conn)
        except (psycopg.Error, errors.AwaError):
            return None
        finally:
            _close_quietly(conn)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection inside one transaction, committed on success."""
        with self.connection() as conn, conn.transaction():
            yield conn

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            _close_quietly(conn)


def _standby_refusal(conn: psycopg.Connection[Any]) -> str | None:
    """After a write refused as read-only: the one line naming the standby (S58) when the
    server is one, else None (a read-only session on a primary keeps its own message)."""
    from awa_tui.engine.core.standby import standby_refusal

    if conn.broken or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return None
    try:
        return standby_refusal(conn)
    except psycopg.Error:
        return None


def _close_quietly(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.close()
    except Exception:  # closing a dead socket may fail; it is gone either way
        pass


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]
