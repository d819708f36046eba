"""Write docs/schema.md: the `awa` schema as it stands after the last migration.

    make schema-doc      # = python -m awa_tui.engine.migrations.schema_doc --output docs/schema.md

The migrations redefine the same trigger functions many times over; this is the one
place that shows what is left once they have all run. A scratch database is created on
AWA_TEST_DATABASE_URL's server if set (as the tests do), else on the embedded Postgres,
migrated, read from the catalogs and dropped. The output is ordered by name and built
from catalog fields that read the same on PostgreSQL 15 and 18 (function bodies are
`prosrc`, the text exactly as the migration wrote it; no `pg_get_functiondef`), so
regenerating it changes it only when a migration changed the schema
(tests/engine/migrations/test_schema_doc.py fails when it is stale).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from awa_tui.engine import migrations
from awa_tui.engine.migrations import INCLUDE_RE, migrate

COMMAND = "make schema-doc"
DEFAULT_OUTPUT = Path(__file__).resolve().parents[3] / "docs" / "schema.md"

# What each table is for and which part writes it. Kept by hand: a migration that adds a
# table adds its line here, or the generator refuses to run (`missing_purposes`).
PURPOSES: dict[str, str] = {
    "alert_deliverer": "one row: which runtime delivers alerts now (the leader, or one follower while nobody "
                       "leads) and until when its lease runs",
    "alert_deliveries": "per alert and sink: pending (tried or not), delivered or silenced, attempts, the next "
                        "try and the last error; leased and marked by the deliverer",
    "alert_outbox": "one row per health transition that starts or ends an alert, written with it by a "
                    "trigger on `health_transitions` (a fleet's: on `fleet_transitions`); pruned after 30 days "
                    "once nothing waits",
    "alert_silences": "per schedule, owner or filter: alerts silenced until a time, with the reason and who; "
                      "audited",
    "alert_sinks": "where alerts go: kind, routing, a stored URL or where the runtime reads its secrets; "
                   "audited",
    "calendars": "named sets of dates that schedules exclude (`calendar=`): one row per calendar, written by "
                 "`awa-tui calendar set|delete` through the audit gate; read by the evaluator, previews and the "
                 "ledger",
    "fence_grants": "the capabilities of open transactions: an operator action (`awa.begin_action`) or an owner's "
                    "reconciliation (`awa.begin_reconcile`) for one session and one transaction, which the "
                    "schedules' update fence asks for instead of a setting anyone may make; written only by "
                    "those functions",
    "calendars_version": "one row: a counter every change of awa.calendars moves (trigger), so a runtime "
                         "re-reads the calendars only after a change",
    "audit_log": "the operator audit trail (append-only): one row per operator action, written by the "
                 "database's own triggers inside the action's transaction; read by `awa-tui audit` and the console",
    "cron_health": "one row per schedule: its health as the leader's health duty last judged it, the "
                   "consecutive-failure count and per-schedule metric values; written by the leader",
    "cron_jobs": "the schedules: one row per name, written by sync (definitions), the evaluator (fires, "
                 "hints) and operator actions (pause, overrides, ownership, retirement)",
    "cron_jobs_changes": "names whose definition, override, owner or retirement changed, noted by triggers "
                         "per writing transaction; read by a runtime's steady sync, pruned after a day",
    "cron_jobs_changes_pruned": "one row: the newest transaction id whose change notes were pruned "
                                "(written by `awa.prune_cron_jobs_changes`)",
    "fleet_transitions": "every change of the fleet's health (ok, no_leader, stalled: since when, why); "
                         "recorded by whichever runtime saw it first, each one an alert",
    "fire_lateness": "per queue: the fire-lateness histogram the metrics serve; kept by the leader",
    "owner_grants": "one database, many teams: which team role (`awa-tui db grants --owner-role`) may act on "
                    "which owner; read by `owner list` and by the row-level security policies that keep a team's "
                    "role to its owners' rows",
    "fire_skips": "instants the fire statement left unfired because of the overlap policy (reason `overlap`), "
                  "and the newest instant of a pass older than the catch-up window (`too_old`), for the "
                  "fire ledger; written by the evaluator",
    "fire_stats": "per owner, queue and verdict: fire counters the metrics serve; kept by the leader",
    "health_meta": "one row: the leader's last health evaluation and the job id its counters have seen",
    "health_transitions": "every change of a schedule's health (since when, from what, why); appended by "
                          "the leader",
    "jobs": "the job queue: one row per fire or manual trigger, claimed and finished by workers, pruned by "
            "retention",
    "leader_lease": "one row: the leader's lease (holder, term, expiry in database time); renewed by the "
                    "leader, taken over through `awa.leader_acquire`",
    "leader_terms": "one row per leadership term, kept by a trigger on `leader_lease`; the fire ledger's "
                    "`no_leader` verdict",
    "ledger_meta": "one row: since when leadership is recorded (before it, the ledger says `unknown`)",
    "ledger_pruned": "per schedule: the latest fire instant among its pruned jobs; written by retention",
    "owners": "one row per owner of schedules: agreement clock, grace and retirement state; written by "
              "runtimes' manifests, reconciliation and owner actions",
    "queue_meta": "per queue: dispatch pause (who, when); written by queue actions",
    "retention_progress": "one row: how far the leader's retention walk over the finished jobs has got "
    "(`awa-tui check` warns when a walk lasts over an hour; metrics awa_retention_*)",
    "release_policy": "one row: the lowest runtime protocol that may lead on this schema and the lowest "
    "that may run at all (rolling deploys; `awa-tui migrate --leaders-from`)",
    "runtime_instances": "one row per runtime process: its snapshot and manifest; written by each "
                         "runtime's reporter, pruned by the leader",
    "schema_migrations": "the applied migration versions; written by `awa-tui migrate`",
}


def missing_purposes(tables: list[str]) -> str | None:
    """One line naming the tables the map lacks, or entries for tables that no longer exist."""
    missing = sorted(set(tables) - set(PURPOSES))
    stale = sorted(set(PURPOSES) - set(tables))
    problems = []
    if missing:
        problems.append(f"no purpose line for table(s) {', '.join(missing)}: add them to PURPOSES in {__file__}")
    if stale:
        problems.append(f"PURPOSES names table(s) the schema does not have: {', '.join(stale)}")
    return "; ".join(problems) or None


class SchemaDocError(Exception):
    """A one-line reason the document cannot be written."""


def _cell(text: str) -> str:
    """Text for a Markdown table cell: pipes escaped, so an expression cannot split a row."""
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`" if text else ""


def _body(text: str) -> str:
    """A function body as written: surrounding blank lines and trailing spaces dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


_DEFINES = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+awa\.(\w+)\s*\(", re.IGNORECASE)


def defined_in() -> dict[str, str]:
    """Per function name, the file that defines it last: the newest migration that creates
    it, or the `functions/` file that migration includes."""
    where: dict[str, str] = {}
    for migration in migrations.available():  # looked up on the module: tests substitute it
        for name in _DEFINES.findall(INCLUDE_RE.sub("", migration.sql)):
            where[name] = migration.file_name
        for path in INCLUDE_RE.findall(migration.sql):
            for name in _DEFINES.findall(migration.included(path)):
                where[name] = f"{path} (included by {migration.file_name})"
    return where


TABLES_SQL = """
SELECT c.oid, c.relname, coalesce(c.reloptions, '{}') AS reloptions, c.relrowsecurity, c.relforcerowsecurity
FROM pg_class c WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('r', 'p')
ORDER BY c.relname
"""
COLUMNS_SQL = """
SELECT a.attrelid AS rel, a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
       a.attidentity, a.attgenerated, pg_get_expr(d.adbin, d.adrelid) AS default_expr
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""
INDEXES_SQL = """
SELECT i.indrelid AS rel, c.relname, pg_get_indexdef(i.indexrelid) AS def
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = ANY(%s) ORDER BY c.relname
"""
# PostgreSQL 18 also records NOT NULL as constraints (contype 'n'); the columns say it.
CONSTRAINTS_SQL = """
SELECT conrelid AS rel, conname, pg_get_constraintdef(oid) AS def
FROM pg_constraint WHERE conrelid = ANY(%s) AND contype <> 'n' ORDER BY conname
"""
TRIGGERS_SQL = """
SELECT t.tgrelid AS rel, t.tgname, t.tgfoid, pg_get_triggerdef(t.oid) AS def
FROM pg_trigger t WHERE t.tgrelid = ANY(%s) AND NOT t.tgisinternal ORDER BY t.tgname
"""
# Row-level security (v032): the schema's own policies (a team role's, made by `db grants
# --owner-role`, are named by and for that role, and a fresh database has none).
POLICIES_SQL = """
SELECT p.polrelid AS rel, p.polname,
       CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END
       || ' FOR ' || CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                                   WHEN 'd' THEN 'DELETE' ELSE 'ALL' END
       || ' TO ' || coalesce((SELECT string_agg(CASE WHEN r = 0 THEN 'public' ELSE r::regrole::text END, ', ')
                              FROM unnest(p.polroles) r), '')
       || coalesce(' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')', '')
       || coalesce(' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', '') AS def
FROM pg_policy p WHERE p.polrelid = ANY(%s) ORDER BY p.polname
"""
FUNCTIONS_SQL = """
SELECT p.oid, p.proname, pg_get_function_identity_arguments(p.oid) AS args,
       pg_get_function_result(p.oid) AS result, l.lanname, p.provolatile, p.prosecdef, p.proisstrict,
       coalesce(p.proconfig, '{}') AS config, p.prokind, p.prosrc,
       CASE WHEN p.prosqlbody IS NOT NULL THEN pg_get_function_sqlbody(p.oid) END AS sqlbody
FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE p.pronamespace = 'awa'::regnamespace
"""
SEQUENCES_SQL = """
SELECT c.relname FROM pg_class c
WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'S'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'i')
ORDER BY c.relname
"""
OTHER_SQL = """
SELECT c.relkind::text AS kind, c.relname FROM pg_class c
WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind IN ('v', 'm', 'f')
ORDER BY c.relname
"""
VOLATILITY = {"i": "IMMUTABLE", "s": "STABLE", "v": "VOLATILE"}


Rows = dict[int, list[dict[str, Any]]]  # catalog rows per table oid


def _table_section(table: dict[str, Any], parts: dict[str, Rows]) -> list[str]:
    oid, name = table["oid"], table["relname"]
    purpose = PURPOSES.get(name, "")
    out = ["", f"### awa.{name}", "", purpose[0].upper() + purpose[1:] + ".", "",
           "| column | type | null | default |", "|---|---|---|---|"]
    for col in parts["columns"][oid]:
        default = col["default_expr"] or ""
        if col["attidentity"]:
            default = "identity, " + ("always" if col["attidentity"] == "a" else "by default")
        elif col["attgenerated"]:
            default = f"generated: {default}"
        out.append(f"| {col['attname']} | {_code(col['type'])} | {'not null' if col['attnotnull'] else 'null'} "
                   f"| {_code(default)} |")
    for title, key, label in (("Indexes", "indexes", "relname"), ("Constraints", "constraints", "conname"),
                              ("Triggers", "triggers", "tgname")):
        if parts[key][oid]:
            out += ["", f"{title}:", "", *(f"- {r[label]}: `{r['def']}`" for r in parts[key][oid])]
    if table["relrowsecurity"]:
        forced = " and forced on the table's owner" if table["relforcerowsecurity"] else ""
        out += ["", f"Row-level security: enabled{forced}.", "", "Policies:", "",
                *(f"- {r['polname']}: `{r['def']}`" for r in parts["policies"][oid])]
    if table["reloptions"]:
        out += ["", "Storage parameters: " + ", ".join(f"`{o}`" for o in sorted(table["reloptions"]))]
    return out


def _function_section(fn: dict[str, Any], source: str | None, triggers: list[str]) -> list[str]:
    traits = [f"returns `{fn['result']}`" if fn["prokind"] != "p" else "procedure",
              f"language {fn['lanname']}", VOLATILITY[fn["provolatile"]]]
    if fn["proisstrict"]:
        traits.append("STRICT")
    if fn["prosecdef"]:
        traits.append("SECURITY DEFINER")
    traits += [f"SET {setting}" for setting in fn["config"]]
    out = ["", f"### awa.{fn['proname']}({fn['args']})", "",
           "; ".join(traits) + "." + (f" Last defined in {source}." if source else "")]
    if fn["result"] == "trigger":
        out += ["", "Used by triggers: " + (", ".join(f"`{t}`" for t in sorted(triggers)) or "none") + "."]
    return [*out, "", "```sql", _body(fn["sqlbody"] or fn["prosrc"]), "```"]


def render(conn: psycopg.Connection[Any], *, current: bool = True) -> str:
    """The document for the database `conn` is connected to (its `awa` schema). `current`:
    it must be this code's schema, every table with its purpose; an earlier schema (the
    upgrade tests compare one) is rendered with the purposes it has."""
    tables = conn.execute(TABLES_SQL).fetchall()
    problem = missing_purposes([t["relname"] for t in tables])
    if problem and current:
        raise SchemaDocError(problem)
    oids = [t["oid"] for t in tables]
    parts: dict[str, Rows] = {}
    for key, query in (("columns", COLUMNS_SQL), ("indexes", INDEXES_SQL), ("constraints", CONSTRAINTS_SQL),
                       ("triggers", TRIGGERS_SQL), ("policies", POLICIES_SQL)):
        parts[key] = defaultdict(list)
        for row in conn.execute(query, (oids,)).fetchall():
            parts[key][row["rel"]].append(row)
    # Sorted here, by code point: ORDER BY on text follows the database's collation.
    functions = sorted(conn.execute(FUNCTIONS_SQL).fetchall(), key=lambda f: (f["proname"], f["args"]))
    version = conn.execute("SELECT max(version) AS v FROM awa.schema_migrations").fetchone()
    names = {t["oid"]: t["relname"] for t in tables}
    used_by: dict[int, list[str]] = defaultdict(list)
    for oid in oids:
        for trig in parts["triggers"][oid]:
            used_by[trig["tgfoid"]].append(f"{names[oid]}.{trig['tgname']}")

    out = [
        "# Schema",
        "",
        f"The `awa` schema after migration v{version['v'] if version else 0:03d}, generated from a freshly "
        f"migrated database by `{COMMAND}` (`awa_tui/engine/migrations/schema_doc.py`). Do not edit it by "
        "hand: the migrations are the source, and `tests/engine/migrations/test_schema_doc.py` fails when this page is "
        "stale. Tables, then functions, each in name order.",
        "",
        "## Tables",
        "",
        "| table | what it is for, who writes it |",
        "|---|---|",
        *(f"| [`awa.{t['relname']}`](#awa{t['relname']}) | {_cell(PURPOSES.get(t['relname'], ''))} |" for t in tables),
    ]
    for table in tables:
        out += _table_section(table, parts)

    sequences = [r["relname"] for r in conn.execute(SEQUENCES_SQL).fetchall()]
    others = conn.execute(OTHER_SQL).fetchall()
    if sequences or others:
        kinds = {"v": "view", "m": "materialized view", "f": "foreign table"}
        out += ["", "## Other relations", "", *(f"- sequence awa.{s}" for s in sequences),
                *(f"- {kinds[o['kind']]} awa.{o['relname']}" for o in others)]

    out += ["", "## Functions", "",
            "Each function's body is its text as the last migration that defined it wrote it."]
    sources = defined_in()
    for fn in functions:
        out += _function_section(fn, sources.get(fn["proname"]), used_by.get(fn["oid"], []))
    return "\n".join(out) + "\n"


def admin_dsn() -> str:
    """The server the tests use: AWA_TEST_DATABASE_URL's, else the embedded Postgres."""
    external = os.environ.get("AWA_TEST_DATABASE_URL")
    if external:
        return external
    from awa_tui import embedded

    return embedded.ensure_running().dsn("postgres")


def generate(admin: str) -> str:
    """Migrate a scratch database on `admin`'s server, render it, drop it."""
    name = f"awa_schema_doc_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        scratch = make_conninfo("", **{**conninfo_to_dict(admin), "dbname": name})
        migrate(scratch)
        with psycopg.connect(scratch, row_factory=dict_row) as conn:
            text = render(conn)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m awa_tui.engine.migrations.schema_doc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write (docs/schema.md)")
    args = parser.parse_args(argv)
    try:
        text = generate(admin_dsn())
    except SchemaDocError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    args.output.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {args.output}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
