"""Fault-injection harness: real runtime processes, a real Postgres, invariants read back
from the database afterwards.

- `Fleet` spawns `python -m awa_tui run --app reliability.app:setup` processes and kills,
  stops and restarts them; their logs are kept for the failure report.
- `current_leader` reads the leader from `pg_locks` (the advisory lock of
  `LEADER_LOCK_KEY`) and maps it to an OS pid through the session's application_name.
- `install_job_origin` records, for every job, which session inserted it and when
  (DB clock), so "the deposed leader stopped firing" is a query, not a log grep.
- `check_fires` is the core invariant: every due fire of every schedule exactly once, in
  order, with no gap. What was due is computed by Postgres (`generate_series` over the
  instants), never by the engine's own cron code.
- `install_guards` makes the database record, in `rel.guard_violation`, every fire of a
  paused or retired row version and every deleted schedule (a table, not a log grep).
- `TcpProxy` sits between a runtime and Postgres and can stop forwarding (a blackhole:
  sockets stay open, bytes stop moving) and resume.
- `record` writes a scenario's line of the summary table (see plugin.py).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from awa_tui.engine.core.db import LEADER_LOCK_KEY

from . import app as rel_app

TESTS_DIR = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
SESSION_ENV = "AWA_REL_SESSION"


def pause(seconds: float) -> None:
    """An explicit harness delay (a fault's timing), never a stand-in for synchronisation."""
    threading.Event().wait(max(0.0, seconds))


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, row_factory=dict_row)  # type: ignore[arg-type]


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]


# --- runtime processes ---------------------------------------------------------------------


@dataclass
class RuntimeProcess:
    proc: subprocess.Popen[bytes]
    log_path: Path
    wrapped: bool = False  # proc is a wrapper (faketime) that forked the runtime and waits for it
    _runtime_pid: int | None = None

    @property
    def pid(self) -> int:
        """The runtime's own pid (under a wrapper, the wrapper's one child): signals go there."""
        if not self.wrapped:
            return self.proc.pid
        if self._runtime_pid is None:
            from helpers import wait_for

            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
            self._runtime_pid = int(wait_for(lambda: children.read_text().split(), 10, what="the wrapped runtime")[0])
        return self._runtime_pid

    @property
    def app(self) -> str:
        return rel_app.app_name(self.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """kill -9: no cleanup at all; the kernel closes its sockets."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self.proc.wait(10)  # a wrapper exits with its runtime

    def stop(self, timeout: float = 20.0, *, signalled: bool = False) -> int:
        """SIGTERM (once), as an orchestrator would; returns the exit status."""
        if not signalled and self.alive():
            os.kill(self.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.proc.wait(10)
            raise AssertionError(f"runtime {self.pid} ignored SIGTERM for {timeout}s\n{self.tail()}") from None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def logged_at(self, text: str, after: datetime) -> datetime | None:
        """Local wall time of the first log line containing `text` logged after `after`."""
        for line in self.log().splitlines():
            if text in line:
                try:
                    when = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
                except ValueError:
                    continue
                # Log lines carry milliseconds: compare at that precision, or a line written
                # in the same millisecond as `after` would read as before it.
                if when >= after.replace(microsecond=after.microsecond // 1000 * 1000):
                    return when
        return None

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


class Fleet:
    """The runtime processes of one scenario; whatever is left is killed at the end."""

    def __init__(self, dsn: str, log_dir: Path, *, count: int, expr: str = "* * * * * *",
                 policy: str = "catch_up", prefix: str = "rel", jitter_ms: int = 0) -> None:
        self.dsn = dsn
        self.log_dir = log_dir
        self.env = {
            rel_app.COUNT_ENV: str(count),
            rel_app.EXPR_ENV: expr,
            rel_app.POLICY_ENV: policy,
            rel_app.PREFIX_ENV: prefix,
            rel_app.JITTER_ENV: str(jitter_ms),
        }
        self.names = rel_app.schedule_names(count, prefix)
        self.expr = expr
        self.procs: list[RuntimeProcess] = []  # every process ever started, for the logs
        self._seq = 0

    def spawn(self, dsn: str | None = None, *, command: Sequence[str] | None = None,
              env: dict[str, str] | None = None, args: Sequence[str] = (),
              wrapper: Sequence[str] = ()) -> RuntimeProcess:
        """Start `awa-tui run --app reliability.app:setup [args]` (or `python <command>`),
        under `wrapper` when given (e.g. `faketime -f +5m`: a program that forks Python)."""
        self._seq += 1
        log_path = self.log_dir / f"runtime-{self._seq:03d}.log"
        full_env = {**os.environ, **self.env, **(env or {}), "PYTHONPATH": os.pathsep.join(
            [str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        full_env.pop("AWA_DATABASE_URL", None)
        full_env.pop("AWA_LEADER_DATABASE_URL", None)
        argv = list(command) if command else [
            "-m", "awa_tui", "run", "--app", "reliability.app:setup", "--dsn", dsn or self.dsn,
            "--operator", "reliability", *args]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*wrapper, sys.executable, *argv],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=full_env,
            )
        runtime = RuntimeProcess(proc, log_path, wrapped=bool(wrapper))
        self.procs.append(runtime)
        return runtime

    @property
    def live(self) -> list[RuntimeProcess]:
        return [p for p in self.procs if p.alive()]

    def by_pid(self, pid: int) -> RuntimeProcess:
        return next(p for p in self.procs if p.pid == pid)

    def stop_all(self) -> dict[int, int]:
        """SIGTERM every live runtime at once; returns pid -> exit status."""
        live = self.live
        for p in live:
            os.kill(p.pid, signal.SIGTERM)
        return {p.pid: p.stop(signalled=True) for p in live}

    def kill_all(self) -> None:
        for p in self.live:
            p.kill()

    def logs(self) -> str:
        return "\n".join(f"--- {p.log_path.name} (pid {p.pid}) ---\n{p.tail()}" for p in self.procs)

    def problems(self) -> list[str]:
        """Lines in any runtime log that show an unexpected exception (a bug, not a fault)."""
        bad = []
        for p in self.procs:
            for line in p.log().splitlines():
                if "Traceback" in line or " crashed " in line:
                    bad.append(f"{p.log_path.name}: {line.strip()}")
        return bad


@contextmanager
def fleet(dsn: str, log_dir: Path, **kwargs: Any) -> Iterator[Fleet]:
    f = Fleet(dsn, log_dir, **kwargs)
    try:
        yield f
    finally:
        f.kill_all()


# --- leader --------------------------------------------------------------------------------

LEADER_SQL = """
SELECT a.application_name AS app, a.pid AS backend_pid
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = %(hi)s AND l.objid::bigint = %(lo)s
"""


@dataclass(frozen=True)
class Leader:
    app: str
    backend_pid: int

    @property
    def os_pid(self) -> int:
        # application_name is "rel-<os pid> leader" (reliability.app labels the sessions).
        return int(self.app.split()[0].removeprefix("rel-"))


def leaders(conn: psycopg.Connection[Any]) -> list[Leader]:
    rows = conn.execute(LEADER_SQL, {"hi": LEADER_LOCK_KEY >> 32, "lo": LEADER_LOCK_KEY & 0xFFFFFFFF}).fetchall()
    return [Leader(r["app"], r["backend_pid"]) for r in rows]


def running_pids(conn: psycopg.Connection[Any]) -> set[int]:
    """The pids of the runtimes whose snapshot row says they run: a runtime writes it after
    its signal handlers are in place, so a SIGTERM from then on stops it cleanly (before,
    the signal's default ends it, status -15)."""
    rows = conn.execute("SELECT pid FROM awa.runtime_instances WHERE stopped_at IS NULL").fetchall()
    return {r["pid"] for r in rows}


def current_leader(conn: psycopg.Connection[Any]) -> Leader | None:
    found = leaders(conn)
    assert len(found) <= 1, f"two sessions hold the leader lock: {found}"
    return found[0] if found else None


def _of_process(column: str) -> str:
    """SQL matching the sessions of one process: `rel-<pid>` and `rel-<pid> leader`."""
    return f"({column} = %(app)s OR {column} LIKE %(app)s || ' %%')"


def terminate_sessions(conn: psycopg.Connection[Any], app: str, *, leader_only: bool = False) -> int:
    """pg_terminate_backend on one process's sessions (or only its leader lock session)."""
    match = "application_name = %(app)s || ' leader'" if leader_only else _of_process("application_name")
    rows = conn.execute(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity "
        f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {match}",
        {"app": app},
    ).fetchall()
    return sum(1 for r in rows if r["ok"])


# --- what the database saw ------------------------------------------------------------------

JOB_ORIGIN_SQL = """
CREATE SCHEMA IF NOT EXISTS rel;
CREATE TABLE IF NOT EXISTS rel.job_origin (
    job_id bigint PRIMARY KEY,
    app    text NOT NULL,
    at     timestamptz NOT NULL
);
CREATE OR REPLACE FUNCTION rel.record_job_origin() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rel.job_origin (job_id, app, at)
    SELECT id, current_setting('application_name'), clock_timestamp() FROM inserted;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS rel_job_origin ON awa.jobs;
CREATE TRIGGER rel_job_origin AFTER INSERT ON awa.jobs
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION rel.record_job_origin();
"""


def install_job_origin(conn: psycopg.Connection[Any]) -> None:
    """Test-only bookkeeping: who inserted each job, and when (DB clock)."""
    conn.execute(JOB_ORIGIN_SQL)  # type: ignore[arg-type]


def fires_by(conn: psycopg.Connection[Any], app: str, after: datetime) -> list[dict[str, Any]]:
    """Jobs inserted by one process's sessions after an instant."""
    return conn.execute(
        f"SELECT job_id, app, at FROM rel.job_origin WHERE {_of_process('app')} AND at > %(after)s ORDER BY at",
        {"app": app, "after": after},
    ).fetchall()


def first_fire_after(conn: psycopg.Connection[Any], after: datetime, exclude_app: str | None = None) -> datetime | None:
    """When the first job after an instant was inserted (by another process than `exclude_app`)."""
    row = conn.execute(
        f"SELECT min(at) AS at FROM rel.job_origin WHERE at > %(after)s "
        f"AND (%(app)s::text IS NULL OR NOT {_of_process('app')})",
        {"after": after, "app": exclude_app},
    ).fetchone()
    return row["at"] if row else None


# The invariant guards, one copy for every scenario. A fire is an update that moves the
# CAS token (last_enqueued_at) and leaves the lifecycle alone (restore also moves the
# token, by design). BEFORE UPDATE sees the row version actually updated (after any
# re-check of a concurrent update), so OLD is the state the fire really met; named zz_ to
# run after awa's own BEFORE triggers (alphabetical), so it sees what the fence let
# through. A violation is recorded, not raised: the storm goes on and the scenario reads
# the table afterwards.
GUARD_SQL = """
CREATE SCHEMA IF NOT EXISTS rel;
CREATE TABLE IF NOT EXISTS rel.guard_violation (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind    text NOT NULL,
    name    text NOT NULL,
    state   timestamptz,
    fire    timestamptz,
    app     text NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE FUNCTION rel.guard_fire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.last_enqueued_at IS DISTINCT FROM OLD.last_enqueued_at
       AND NEW.paused_at IS NOT DISTINCT FROM OLD.paused_at
       AND NEW.retired_at IS NOT DISTINCT FROM OLD.retired_at THEN
        IF OLD.paused_at IS NOT NULL THEN
            INSERT INTO rel.guard_violation (kind, name, state, fire, app)
            VALUES ('fired while paused', OLD.name, OLD.paused_at, NEW.last_enqueued_at,
                    current_setting('application_name'));
        END IF;
        IF OLD.retired_at IS NOT NULL THEN
            INSERT INTO rel.guard_violation (kind, name, state, fire, app)
            VALUES ('fired while retired', OLD.name, OLD.retired_at, NEW.last_enqueued_at,
                    current_setting('application_name'));
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE OR REPLACE FUNCTION rel.guard_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rel.guard_violation (kind, name, app)
    VALUES ('deleted', OLD.name, current_setting('application_name'));
    RETURN OLD;
END
$$;
DROP TRIGGER IF EXISTS zz_rel_guard_fire ON awa.cron_jobs;
CREATE TRIGGER zz_rel_guard_fire BEFORE UPDATE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION rel.guard_fire();
DROP TRIGGER IF EXISTS zz_rel_guard_delete ON awa.cron_jobs;
CREATE TRIGGER zz_rel_guard_delete BEFORE DELETE ON awa.cron_jobs
    FOR EACH ROW EXECUTE FUNCTION rel.guard_delete();
"""


def guard_violations(conn: psycopg.Connection[Any]) -> list[str]:
    """What the guards recorded, one line each (empty: no fire on a paused or retired row
    version, no schedule deleted)."""
    rows = conn.execute("SELECT kind, name, state, fire, app FROM rel.guard_violation ORDER BY id").fetchall()
    return [f"{r['name']} {r['kind']} (since {r['state']}, fire {r['fire']}, by {r['app']!r})" for r in rows]


def install_guards(conn: psycopg.Connection[Any]) -> None:
    """Install the guards and prove each records what it should (so a quiet storm means
    something). The probes run with awa's own fence set aside and are rolled back."""
    conn.execute(GUARD_SQL)  # type: ignore[arg-type]
    with conn.transaction():
        conn.execute("ALTER TABLE awa.cron_jobs DISABLE TRIGGER cron_jobs_fence")
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, paused_at) "
                     "VALUES ('rel-probe-p', '* * * * *', 'k', now())")
        conn.execute("INSERT INTO awa.cron_jobs (name, cron_expr, kind, retired_at, retired_by) "
                     "VALUES ('rel-probe-r', '* * * * *', 'k', now(), 'probe')")
        conn.execute("UPDATE awa.cron_jobs SET last_enqueued_at = now() WHERE name IN ('rel-probe-p', 'rel-probe-r')")
        conn.execute("DELETE FROM awa.cron_jobs WHERE name = 'rel-probe-p'")
        kinds = conn.execute("SELECT name, kind FROM rel.guard_violation ORDER BY name, kind").fetchall()
        assert [(r["name"], r["kind"]) for r in kinds] == [
            ("rel-probe-p", "deleted"), ("rel-probe-p", "fired while paused"), ("rel-probe-r", "fired while retired")
        ], kinds
        raise psycopg.Rollback()
    assert guard_violations(conn) == []


@dataclass
class FireCheck:
    """The fires of a set of schedules, checked against what was due."""

    schedules: int = 0
    fires: int = 0
    duplicates: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.duplicates or self.losses or self.out_of_order)

    def describe(self, limit: int = 10) -> str:
        parts = [f"{self.schedules} schedules, {self.fires} fires"]
        for label, items in (("duplicates", self.duplicates), ("losses", self.losses),
                             ("out of order", self.out_of_order)):
            if items:
                parts.append(f"{len(items)} {label}: {items[:limit]}")
        return "; ".join(parts)


# The instants of the expressions the scenarios use, as a Postgres interval: the oracle of
# "what was due" is generate_series, independent of the engine's cron implementation.
STEPS = {"* * * * * *": "1 second", "* * * * *": "1 minute"}

DUE_INSTANTS_SQL = """
SELECT s.name, g.at
FROM unnest(%(names)s::text[], %(froms)s::timestamptz[], %(untils)s::timestamptz[]) AS s(name, since, until)
CROSS JOIN LATERAL generate_series(date_trunc(%(unit)s, s.since), s.until, %(step)s::interval) AS g(at)
WHERE g.at >= s.since
"""


def due_instants(conn: psycopg.Connection[Any], expr: str, spans: Sequence[tuple[str, datetime, datetime]]
                 ) -> list[tuple[str, datetime]]:
    """Every instant of `expr` within each (name, since, until) span, both ends included."""
    if expr not in STEPS:
        raise ValueError(f"no independent oracle for cron expression {expr!r} (known: {sorted(STEPS)})")
    rows = conn.execute(DUE_INSTANTS_SQL, {
        "names": [n for n, _, _ in spans], "froms": [a for _, a, _ in spans], "untils": [b for _, _, b in spans],
        "unit": STEPS[expr].split()[1], "step": STEPS[expr]}).fetchall()
    return [(r["name"], r["at"]) for r in rows]


def check_fires(
    conn: psycopg.Connection[Any], names: Sequence[str], expr: str, until: datetime,
    *, created_slack: timedelta = timedelta(seconds=10),
) -> FireCheck:
    """Every due fire of every schedule, from its first fire up to `until`, exactly once,
    with job ids ascending in fire order (catch_up schedules).

    The first fire itself must come within `created_slack` of the row's creation, so a
    schedule that lost its whole beginning does not pass.
    """
    rows = conn.execute(
        """
        SELECT j.id, j.metadata ->> 'cron_name' AS name, (j.metadata ->> 'cron_fire_time')::timestamptz AS fire,
               c.created_at
        FROM awa.jobs j JOIN awa.cron_jobs c ON c.name = j.metadata ->> 'cron_name'
        WHERE j.metadata ? 'cron_name' AND NOT j.metadata ? 'triggered_manually'
          AND j.metadata ->> 'cron_name' = ANY(%s)
        ORDER BY 2, 3, 1
        """,
        (list(names),),
    ).fetchall()
    check = FireCheck(schedules=len(names))
    by_name: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in rows:
        by_name[r["name"]].append(r)
    seen: dict[tuple[str, datetime], int] = {}
    spans = []
    for name, fires in by_name.items():
        if not fires:
            check.losses.append(f"{name}: never fired")
            continue
        check.fires += len(fires)
        for r in fires:
            seen[(name, r["fire"])] = seen.get((name, r["fire"]), 0) + 1
        ids = [r["id"] for r in fires]  # sorted by fire time
        if ids != sorted(ids):
            check.out_of_order.append(name)
        if fires[0]["fire"] > fires[0]["created_at"] + created_slack:
            check.losses.append(f"{name}: first fire {fires[0]['fire'].isoformat()} long after creation")
        spans.append((name, fires[0]["fire"], until))
    check.duplicates += [f"{n}@{f.isoformat()} x{k}" for (n, f), k in seen.items() if k > 1]
    check.losses += [f"{n}@{at.isoformat()}" for n, at in due_instants(conn, expr, spans) if (n, at) not in seen]
    return check


def caught_up(conn: psycopg.Connection[Any], names: Sequence[str], until: datetime) -> bool:
    row = conn.execute(
        "SELECT count(*) AS behind FROM awa.cron_jobs WHERE name = ANY(%s) "
        "AND (last_enqueued_at IS NULL OR last_enqueued_at < %s)",
        (list(names), until),
    ).fetchone()
    return bool(row) and row["behind"] == 0


def settle(conn: psycopg.Connection[Any], names: Sequence[str], timeout: float = 60) -> None:
    """Wait for a leader and for every schedule to have fired in the last two seconds."""
    from helpers import wait_for

    wait_for(lambda: current_leader(conn), timeout, what="a leader")
    wait_for(lambda: caught_up(conn, names, db_now(conn) - timedelta(seconds=2)), timeout,
             what="every schedule firing")


def deadlocks(conn: psycopg.Connection[Any]) -> int:
    """Deadlocks Postgres detected in this database (reported when the backends flush)."""
    row = conn.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return int(row["deadlocks"]) if row else 0


def last_audit_id(conn: psycopg.Connection[Any]) -> int:
    """The newest audit entry's id: what a scenario did is what comes after it."""
    row = conn.execute("SELECT coalesce(max(id), 0) AS id FROM awa.audit_log").fetchone()
    return int(row["id"]) if row else 0


# --- a TCP proxy that can blackhole ---------------------------------------------------------


class TcpProxy:
    """127.0.0.1:<port> -> Postgres (TCP host/port or a Unix socket path).

    `blackhole()` stops moving bytes in both directions and stops accepting, with every
    socket left open: to the runtime the network just went silent (no error, no reset),
    as with a dropped route. Bytes already written wait in kernel buffers and flow again
    on `heal()`, like TCP retransmission after a partition ends.
    """

    def __init__(self, upstream: str | tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port: int = self.listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept_loop)

    def _spawn(self, target: Any, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name="rel-proxy")
        t.start()
        self._threads.append(t)

    def _dial(self) -> socket.socket:
        if isinstance(self.upstream, tuple):
            return socket.create_connection(self.upstream, timeout=5)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.upstream)
        return s

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            if not self._open.wait(0.05):
                continue  # blackholed: connections wait in the backlog, unanswered
            ready, _, _ = select.select([self.listener], [], [], 0.05)
            if not ready:
                continue
            try:
                down, _ = self.listener.accept()
                up = self._dial()
            except OSError:
                continue
            up.settimeout(None)
            with self._lock:
                self._socks += [down, up]
            self._spawn(self._pump, down, up)

    def _pump(self, down: socket.socket, up: socket.socket) -> None:
        peers = {down: up, up: down}
        try:
            while not self._stop.is_set():
                if not self._open.wait(0.05):
                    continue
                ready, _, _ = select.select(list(peers), [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    peers[s].sendall(data)
        except OSError:
            return
        finally:
            for s in (down, up):
                try:
                    s.close()
                except OSError:
                    pass

    def dsn(self, dbname: str, user: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={user} connect_timeout=5"

    def blackhole(self) -> None:
        self._open.clear()

    def heal(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._stop.set()
        self._open.set()
        for t in self._threads:
            t.join(2)
        with self._lock:
            socks, self._socks = self._socks, []
        for s in [self.listener, *socks]:
            try:
                s.close()
            except OSError:
                pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def upstream_of(dsn: str) -> str | tuple[str, int]:
    """Where a libpq DSN points: a Unix socket path (host=<dir>) or a (host, port) pair."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    host, port = str(info.get("host") or "/tmp"), str(info.get("port") or 5432)
    if host.startswith("/"):
        return f"{host}/.s.PGSQL.{port}"
    return (host, int(port))


# --- the summary table ----------------------------------------------------------------------


@dataclass
class Summary:
    scenario: str
    runs: int = 0
    # None (null in the JSON): not checked in this scenario; 0 means checked and none.
    fires_checked: int | None = None
    duplicates: int | None = None
    losses: int | None = None
    max_failover_s: float | None = None
    seconds: float = 0.0
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def count(self, check: Any, *, losses: bool = True) -> None:
        """Copy a fire check's counts into the table row. `losses=False` where this check's
        gaps are expected by design (a restore skips the retired period, S28): the scenario
        then checks losses another way, or they stay null (not checked)."""
        self.fires_checked = check.fires
        self.duplicates = len(check.duplicates)
        self.losses = len(check.losses) if losses else None


def record(summary: Summary) -> None:
    """Write one scenario line for the end-of-run table (collected across xdist workers)."""
    session = os.environ.get(SESSION_ENV, "adhoc")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f".{session}-{summary.scenario}-{os.getpid()}-{random.randrange(1 << 30)}.json"
    path.write_text(json.dumps(asdict(summary), default=str))

