"""A least-privilege role layout for the awa schema (`awa-tui db grants`).

Four NOLOGIN group roles, named from a prefix (default `awa_`); grant them to login roles:

- `<prefix>owner` owns the schema and every object in it. It alone can ALTER a table
  (and so disable a trigger) or bypass the audit trail's append-only trigger, by
  disabling it first: that is what owning a table means in Postgres. Run migrations as it.
- `<prefix>runtime`: sync, publish snapshots, evaluate and fire, work jobs, reconcile
  (`awa.begin_reconcile`). It cannot pause, adopt, retire or delete a schedule (the fence
  asks for a capability only the audit gate grants, never a setting), nor write the audit trail.
- `<prefix>operator`: the console and the CLI's actions (pause, resume, trigger, remove,
  retire, restore, adopt, transfer, queue pause/resume/drain), through the audit gate
  `awa.begin_action`. A console that also leads (`--lead`) needs the runtime role too.
- `<prefix>readonly`: SELECT only.

A team's role (`--owner-role ROLE --owners a,b`, one database, many teams) may pause, resume,
trigger and override the schedules of its owners and retry or cancel their jobs, and sees
only their rows (row-level security, v032): `owner_role`.

Nobody but the owner holds INSERT, UPDATE, DELETE or TRUNCATE on awa.audit_log: its rows
are written by the database's own triggers (SECURITY DEFINER, as the owner).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg

from awa_tui.engine.core.db import connect, translate
from awa_tui.engine.core.errors import ReadOnly, ValidationError
from awa_tui.engine.core.standby import standby_refusal
from awa_tui.engine.schedules.columns import DEFINITION, OVERRIDDEN, OVERRIDE_COLUMNS

DEFAULT_PREFIX = "awa_"
_PREFIX_RE = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")

# Columns each writer may UPDATE on awa.cron_jobs. The runtime: definitions (sync,
# reconciliation), the fire path's token and hint, automatic retirement. The operator:
# pause, ownership, retirement, and the token/hint a restore resets; an override (issue
# 16) writes the definition columns it replaces and `overridden`.
RUNTIME_SCHEDULE_COLUMNS = (
    *DEFINITION, "last_enqueued_at", "next_fire_at", "updated_at", "retired_at", "retired_by", OVERRIDDEN,
    "fires_count", "finished_at",  # the fire statement counts fires and finishes (v009)
)
OPERATOR_SCHEDULE_COLUMNS = (
    "paused_at", "paused_by", "paused_until", "pause_reason", "owner", "retired_at", "retired_by",
    "last_enqueued_at", "next_fire_at", "updated_at",
    *OVERRIDE_COLUMNS, OVERRIDDEN,
)
OWNER_BOOKKEEPING_COLUMNS = (
    "certificate_hash", "certificate_size", "certified_at", "agreement_hash", "agreement_since",
    "agreement_seen_at", "updated_at",
)

# Every table of the schema with what each role may do beyond SELECT (all three read
# everything). A table missing here fails tests/engine/core/test_audit_roles.py: a new table
# needs a decision, not a default.
WRITES: dict[str, dict[str, str]] = {
    "cron_jobs": {
        "runtime": f"INSERT, UPDATE ({', '.join(RUNTIME_SCHEDULE_COLUMNS)})",
        "operator": f"UPDATE ({', '.join(OPERATOR_SCHEDULE_COLUMNS)}), DELETE",
    },
    # The fire statement and the worker write jobs, the leader's retention prunes them. An
    # operator's trigger, backfill, retry, cancel, drain and prune go through the audited
    # functions of OPERATOR_FUNCTIONS (v035): no direct write, so none without its audit row.
    "jobs": {"runtime": "INSERT, UPDATE, DELETE"},
    "queue_meta": {"operator": "INSERT, UPDATE (paused, paused_at, paused_by)"},
    "runtime_instances": {"runtime": "INSERT, UPDATE, DELETE"},
    "leader_lease": {"runtime": "INSERT, UPDATE"},
    "owners": {
        "runtime": f"INSERT, UPDATE ({', '.join(OWNER_BOOKKEEPING_COLUMNS)})",
        "operator": f"INSERT, UPDATE ({', '.join(OWNER_BOOKKEEPING_COLUMNS)})",
    },
    "leader_terms": {},  # written by the lease's trigger (SECURITY DEFINER) only
    # The sync notes (S50, v012): written by their triggers and awa.prune_cron_jobs_changes
    # (SECURITY DEFINER) only; read by every role's probe.
    "cron_jobs_changes": {},
    "cron_jobs_changes_pruned": {},
    "ledger_meta": {},
    "ledger_pruned": {"runtime": "INSERT, UPDATE"},  # an operator's prune: awa.prune_jobs (v035)
    # How far the leader's retention walk has got (v027): one row, the leader's.
    "retention_progress": {"runtime": "UPDATE"},
    # The fire statement records skipped_overlap instants; retention prunes them.
    "fire_skips": {"runtime": "INSERT, DELETE"},
    "audit_log": {},
    "schema_migrations": {},
    # Who may run and lead (v019): changed by `awa-tui migrate --leaders-from`, the owner's.
    "release_policy": {},
    # Health (S42): the leader's duty judges, records transitions and counts fires; the
    # job-outcome and resume triggers (SECURITY DEFINER) keep the failure count.
    "cron_health": {"runtime": "INSERT, UPDATE"},
    "health_transitions": {"runtime": "INSERT, DELETE"},
    "health_meta": {"runtime": "UPDATE"},
    "fire_stats": {"runtime": "INSERT, UPDATE"},
    "fire_lateness": {"runtime": "INSERT, UPDATE"},
    # Calendars (S56, v018): operators edit them (audited by their trigger); the version
    # row is bumped by that trigger (SECURITY DEFINER) only.
    "calendars": {"operator": "INSERT, UPDATE, DELETE"},
    "calendars_version": {},
    # Alerts (S63, v023): operators add and remove sinks and silence schedules (audited by
    # their triggers); the outbox and its deliveries are written by the health_transitions
    # trigger (SECURITY DEFINER); the leader's deliverer leases, marks and prunes them, and
    # opens or closes a PagerDuty sink's grouped incident; a silence marks waiting ones.
    "alert_sinks": {"runtime": "UPDATE (group_open)", "operator": "INSERT, DELETE"},
    "alert_silences": {"operator": "INSERT"},
    "alert_outbox": {"runtime": "DELETE"},
    "alert_deliveries": {"runtime": "UPDATE", "operator": "UPDATE (state, silence_id)"},
    # Fleet alerts (S70, v028): any runtime records a change of the fleet's health (its
    # trigger, SECURITY DEFINER, writes the outbox) and the deliverer prunes old ones; the
    # deliverer's lease is taken and renewed by the runtime that delivers.
    "fleet_transitions": {"runtime": "INSERT, DELETE"},
    "alert_deliverer": {"runtime": "UPDATE"},
    # The fence's capabilities (v021): written by SECURITY DEFINER functions only.
    "fence_grants": {},
    # Which team's role may act on which owner (v032): written by `db grants --owner-role`.
    "owner_grants": {},
}
# The audit gate, its events, and the writes to jobs an action makes (v035): each function
# does the write and its audit row together, after the gate for that action, on the targets
# the caller's role may act on. A team's role gets TEAM_FUNCTIONS of them.
TEAM_FUNCTIONS = (
    "awa.begin_action(text, text, jsonb)",
    "awa.record_event(text, text, jsonb, jsonb, jsonb)",
    "awa.trigger_job(text, jsonb)",
    "awa.backfill_jobs(text, text[], jsonb)",
    "awa.retry_job(bigint)",
    "awa.cancel_job(bigint)",
)
OPERATOR_FUNCTIONS = (
    *TEAM_FUNCTIONS,
    "awa.drain_queue(text)",
    "awa.prune_jobs(timestamp with time zone, integer, integer, timestamp with time zone, bigint, jsonb)",
)
# The runtime's: an owner's reconciliation (its capability for the fence, v021), the sync
# notes' pruning, whether it may lead (the election calls it as the runtime, v019), and the
# leader's end of pauses that reached their end (audited as awa-autoresume, v025).
RUNTIME_FUNCTIONS = (
    "awa.begin_reconcile(text)",
    "awa.prune_cron_jobs_changes(interval)",
    "awa.may_lead(uuid)",
    "awa.end_pauses(timestamp with time zone, integer, text)",
)
# SECURITY DEFINER functions no role calls: only the schema's own functions do (the
# fence's capabilities). With the trigger functions, which need no EXECUTE, this is every
# SECURITY DEFINER function of the schema (tests/engine/core/test_audit_roles.py).
INTERNAL_FUNCTIONS = (
    "awa.fence_grant(text, text)",
    "awa.fence_capability(text)",
)


@dataclass(frozen=True)
class RoleLayout:
    prefix: str
    owner: str
    runtime: str
    operator: str
    readonly: str
    statements: tuple[str, ...]

    @property
    def roles(self) -> tuple[str, str, str, str]:
        return (self.owner, self.runtime, self.operator, self.readonly)

    @property
    def sql(self) -> str:
        """The whole layout as one script (one transaction), as `db grants` prints it."""
        lines = (s if s.startswith("--") else f"{s};" for s in self.statements)
        return "BEGIN;\n" + "\n".join(lines) + "\nCOMMIT;\n"


def check_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise ValidationError(
            f"prefix: lower-case letters, digits and _ (1..41, not starting with a digit) required, got {prefix!r}"
        )
    return prefix


def _create_role(role: str) -> str:
    return (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') "
        f"THEN CREATE ROLE {role} NOLOGIN; END IF; END $$"
    )


def role_layout(prefix: str = DEFAULT_PREFIX) -> RoleLayout:
    """The layout's SQL for `prefix`; idempotent (applying it twice changes nothing)."""
    prefix = check_prefix(prefix)
    owner, runtime, operator, readonly = (f"{prefix}{r}" for r in ("owner", "runtime", "operator", "readonly"))
    users = f"{runtime}, {operator}, {readonly}"
    roles = {"runtime": runtime, "operator": operator}
    statements = [
        "-- Same lock order as a fire (cron_jobs, then jobs): ownership changes wait behind it",
        "LOCK TABLE awa.cron_jobs, awa.jobs IN ACCESS EXCLUSIVE MODE",
        *(_create_role(r) for r in (owner, runtime, operator, readonly)),
        "-- The owner owns the schema and everything in it (identity sequences follow their table)",
        f"ALTER SCHEMA awa OWNER TO {owner}",
        "DO $$ DECLARE r record; BEGIN "
        "FOR r IN SELECT c.oid::regclass AS t, CASE c.relkind WHEN 'v' THEN 'VIEW' "
        "WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind FROM pg_class c "
        "WHERE c.relnamespace = 'awa'::regnamespace AND (c.relkind IN ('r', 'p', 'v', 'm') OR (c.relkind = 'S' "
        "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))) "
        f"LOOP EXECUTE format('ALTER %s %s OWNER TO {owner}', r.kind, r.t); END LOOP; "
        "FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p WHERE p.pronamespace = 'awa'::regnamespace "
        f"LOOP EXECUTE format('ALTER ROUTINE %s OWNER TO {owner}', r.f); END LOOP; END $$",
        "-- Start from nothing, so applying again converges",
        "REVOKE ALL ON SCHEMA awa FROM PUBLIC",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA awa FROM PUBLIC, {users}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA awa FROM PUBLIC, {users}",
        *(f"REVOKE ALL ON FUNCTION {f} FROM PUBLIC, {users}"
          for f in (*OPERATOR_FUNCTIONS, *RUNTIME_FUNCTIONS, *INTERNAL_FUNCTIONS)),
        f"GRANT USAGE ON SCHEMA awa TO {users}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA awa TO {users}",
    ]
    for table, writes in WRITES.items():
        for role_key, privileges in writes.items():
            statements.append(f"GRANT {privileges} ON awa.{table} TO {roles[role_key]}")
    statements += [f"GRANT EXECUTE ON FUNCTION {f} TO {operator}" for f in OPERATOR_FUNCTIONS]
    statements += [f"GRANT EXECUTE ON FUNCTION {f} TO {runtime}" for f in RUNTIME_FUNCTIONS]
    return RoleLayout(prefix, owner, runtime, operator, readonly, tuple(statements))


def apply_layout(dsn: str, layout: RoleLayout) -> dict[str, Any]:
    """Run the layout in one transaction. Needs a superuser (or the current owner of every
    awa object, member of the new owner role). Returns {prefix, roles, statements}."""
    conn = connect(dsn, application_name="awa-tui db grants")
    try:
        refusal = standby_refusal(conn)  # the one line every refused write on a standby gives
        if refusal is not None:
            raise ReadOnly(refusal)
        with conn.transaction():
            for statement in layout.statements:
                if not statement.startswith("--"):
                    conn.execute(statement)  # type: ignore[arg-type]  # built from a checked prefix
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()
    return {"prefix": layout.prefix, "roles": list(layout.roles),
            "statements": sum(1 for s in layout.statements if not s.startswith("--"))}


# --- a team's role: one database, many teams (v032) ------------------------------------------

_ROLE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_SCOPE = "((SELECT awa.owner_scope())::text[])"
_NAMES = f"(SELECT c.name FROM awa.cron_jobs c WHERE c.owner = ANY {_SCOPE})"
# Each table v032 put under row-level security, and the rows of it a team's role keeps: its
# owners' schedules and owner rows, what names one of those schedules (jobs, ledger, health,
# sync notes, audit entries), the runtimes declaring its owners (a manifest holds every
# definition) or none, and its own grants (awa.owner_scope reads them as the role).
# `(SELECT awa.owner_scope())` is computed once per statement, not per row. A table missing
# here (or here and not under row-level security) fails tests/security/test_owner_access.py.
SCOPED_ROWS: dict[str, str] = {
    "cron_jobs": f"owner = ANY {_SCOPE}",
    "owners": f"owner = ANY {_SCOPE}",
    "fire_stats": f"owner = ANY {_SCOPE}",
    "jobs": f"metadata ->> 'cron_name' IN {_NAMES}",
    "ledger_pruned": f"cron_name IN {_NAMES}",
    "fire_skips": f"cron_name IN {_NAMES}",
    "cron_health": f"name IN {_NAMES}",
    "health_transitions": f"name IN {_NAMES}",
    "cron_jobs_changes": f"name IN {_NAMES}",
    "runtime_instances": f"owner IS NULL OR owner = ANY {_SCOPE}",
    "owner_grants": "EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role AND pg_has_role(r.oid, 'USAGE'))",
    "audit_log": (f"target IN {_NAMES} OR target IN (SELECT 'owner:' || o FROM unnest{_SCOPE} o) "
                  "OR (starts_with(target, 'job:') AND target IN (SELECT 'job:' || j.id FROM awa.jobs j))"),
    # Alerts (v033): its schedules' alerts and the fleet's (nothing fires concerns every
    # team), the deliveries of those (the outbox as the team sees it), its silences.
    "alert_outbox": f"fleet OR name IN {_NAMES}",
    "alert_deliveries": "outbox_id IN (SELECT o.id FROM awa.alert_outbox o)",
    "alert_silences": f"name IN {_NAMES} OR owner = ANY {_SCOPE}",
}
# What a team's role may write beyond what it sees: a job of its schedules, of the kind the
# schedule has (a trigger, a backfill), never a job of another kind under its schedule's name.
SCOPED_CHECKS = {
    "jobs": ("(metadata ->> 'cron_name', kind) IN "
             f"(SELECT c.name, c.kind FROM awa.cron_jobs c WHERE c.owner = ANY {_SCOPE})"),
}
# What a team's role may change: pause (and its window), the fire token a resume resets, an
# override; a trigger's job, a retry or cancel of its jobs. Not the owner or retirement of a
# schedule, no delete, no queue, calendar or alert.
TEAM_SCHEDULE_COLUMNS = (
    "paused_at", "paused_by", "paused_until", "pause_reason", "last_enqueued_at", "next_fire_at", "updated_at",
    *OVERRIDE_COLUMNS, OVERRIDDEN,
)
TEAM_WRITES = {
    "cron_jobs": f"UPDATE ({', '.join(TEAM_SCHEDULE_COLUMNS)})",
}
# The alert sinks hold webhook addresses: not a team's to read (it reads its alerts, v033).
TEAM_UNREADABLE = ("alert_sinks",)


@dataclass(frozen=True)
class OwnerRole:
    role: str
    owners: tuple[str, ...]  # empty when revoked
    statements: tuple[str, ...]

    @property
    def sql(self) -> str:
        lines = (s if s.startswith("--") else f"{s};" for s in self.statements)
        return "BEGIN;\n" + "\n".join(lines) + "\nCOMMIT;\n"


def check_role(role: str) -> str:
    if not isinstance(role, str) or not _ROLE_RE.match(role):
        raise ValidationError(
            f"role: lower-case letters, digits and _ (1..63, not starting with a digit) required, got {role!r}"[:200])
    return role


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _revoke_all(role: str) -> list[str]:
    return [
        *(f"DROP POLICY IF EXISTS {role} ON awa.{table}" for table in SCOPED_ROWS),
        f"REVOKE ALL ON ALL TABLES IN SCHEMA awa FROM {role}",
        *(f"REVOKE ALL ON FUNCTION {f} FROM {role}" for f in OPERATOR_FUNCTIONS),
        f"DELETE FROM awa.owner_grants WHERE role = {_literal(role)}",
    ]


def owner_role(role: str, owners: list[str] | tuple[str, ...], *, revoke: bool = False) -> OwnerRole:
    """The SQL making `role` (a NOLOGIN group role) a team's role acting on `owners` only, or
    (revoke) taking every privilege on the schema from it; idempotent, one transaction."""
    from awa_tui.engine.ownership.manifest import check_owner

    role = check_role(role)
    if role.startswith("pg_"):
        raise ValidationError(f"role: {role} is reserved by PostgreSQL")
    if revoke:
        statements = ["-- Nothing of the schema stays granted to it; the role itself stays (drop it yourself)",
                      *_revoke_all(role), f"REVOKE USAGE ON SCHEMA awa FROM {role}"]
        return OwnerRole(role, (), tuple(statements))
    chosen = tuple(dict.fromkeys(check_owner(o) for o in owners))
    if not chosen:
        raise ValidationError("owners: at least one owner is required (or --revoke)")
    readable = [t for t in WRITES if t not in TEAM_UNREADABLE]
    statements = [
        _create_role(role),
        "-- Start from nothing, so applying again converges",
        *_revoke_all(role),
        f"GRANT USAGE ON SCHEMA awa TO {role}",
        f"GRANT SELECT ON {', '.join(f'awa.{t}' for t in readable)} TO {role}",
        *(f"GRANT {privileges} ON awa.{table} TO {role}" for table, privileges in TEAM_WRITES.items()),
        *(f"GRANT EXECUTE ON FUNCTION {f} TO {role}" for f in TEAM_FUNCTIONS),
        "INSERT INTO awa.owner_grants (role, owner) VALUES "
        + ", ".join(f"({_literal(role)}, {_literal(o)})" for o in chosen),
        "-- Its rows only: a restrictive policy of its own on each table under row-level security",
        *(f"CREATE POLICY {role} ON awa.{table} AS RESTRICTIVE TO {role} USING ({using})"
          + (f" WITH CHECK ({SCOPED_CHECKS[table]})" if table in SCOPED_CHECKS else "")
          for table, using in SCOPED_ROWS.items()),
    ]
    return OwnerRole(role, chosen, tuple(statements))


def apply_owner_role(dsn: str, spec: OwnerRole) -> dict[str, Any]:
    """Run a team role's SQL in one transaction (as a superuser). Returns {role, owners, statements}."""
    conn = connect(dsn, application_name="awa-tui db grants")
    try:
        refusal = standby_refusal(conn)
        if refusal is not None:
            raise ReadOnly(refusal)
        with conn.transaction():
            if spec.owners:
                # A role of the layout would stop seeing other teams' rows: refused, nothing written.
                taken = conn.execute(
                    "SELECT 1 FROM pg_roles WHERE rolname = %s AND (rolsuper OR rolbypassrls)", (spec.role,)).fetchone()
                if taken is not None:
                    raise ValidationError(f"role: {spec.role} is a superuser or bypasses row-level security; "
                                          "a team's role must be neither")
            for statement in spec.statements:
                if not statement.startswith("--"):
                    conn.execute(statement)  # type: ignore[arg-type]  # built from checked names
    except psycopg.Error as exc:
        raise translate(exc) from None
    finally:
        conn.close()
    return {"role": spec.role, "owners": list(spec.owners), "revoked": not spec.owners,
            "statements": sum(1 for s in spec.statements if not s.startswith("--"))}
