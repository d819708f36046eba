"""docs/operations.md's table of what each role may do, table by table and function by
function, is what the database grants: the layout of `awa-tui db grants` applied to a fresh
database, read back from the catalog (has_table_privilege, has_column_privilege,
has_function_privilege), never from the code that wrote the grants."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg
from audit_helpers import drop_layout, unique_prefix
from psycopg.rows import dict_row

from awa_tui.engine.actions import grants

DOC = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
BEGIN, END = "<!-- privileges: begin -->", "<!-- privileges: end -->"
KINDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")

TABLES_SQL = """
WITH r(key, role) AS (SELECT * FROM unnest(%(keys)s::text[], %(roles)s::text[]))
SELECT c.relname AS name, r.key,
       (SELECT string_agg(p, ', ' ORDER BY array_position(%(kinds)s::text[], p)) FROM unnest(%(kinds)s::text[]) p
        WHERE has_table_privilege(r.role, c.oid, p)) AS whole,
       (SELECT string_agg(a.attname, ', ' ORDER BY a.attnum) FROM pg_attribute a
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          AND has_column_privilege(r.role, c.oid, a.attnum, 'UPDATE')
          AND NOT has_table_privilege(r.role, c.oid, 'UPDATE')) AS columns
FROM pg_class c, r WHERE c.relnamespace = 'awa'::regnamespace AND c.relkind = 'r'
ORDER BY 1
"""
# Functions some role of the layout, or PUBLIC, may call though SECURITY DEFINER (they run
# as the owner), and every function granted to a role explicitly.
FUNCTIONS_SQL = """
WITH r(key, role) AS (SELECT * FROM unnest(%(keys)s::text[], %(roles)s::text[]))
SELECT p.oid::regprocedure::text AS name,
       array_remove(array_agg(CASE WHEN has_function_privilege(r.role, p.oid, 'EXECUTE') THEN r.key END
                              ORDER BY r.key), NULL) AS callers,
       EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
               WHERE a.grantee = 0) AS public
FROM pg_proc p, r WHERE p.pronamespace = 'awa'::regnamespace AND p.prosecdef
GROUP BY p.oid ORDER BY 1
"""


def _cell(whole: str | None, columns: str | None) -> str:
    parts = [whole or ""] + ([f"UPDATE ({columns})"] if columns else [])
    return ", ".join(p for p in parts if p) or "-"


TEAM = "a team role"  # `db grants --owner-role`, shown beside the layout's roles


def render(conn: psycopg.Connection[Any], layout: grants.RoleLayout, team: str) -> str:
    """The doc's block as the database grants it, the layout's roles named as the default prefix's."""
    roles = {"runtime": layout.runtime, "operator": layout.operator, "readonly": layout.readonly, "team": team}
    args = {"keys": list(roles), "roles": list(roles.values()), "kinds": list(KINDS)}
    tables: dict[str, dict[str, str]] = {}
    for row in conn.execute(TABLES_SQL, args).fetchall():
        tables.setdefault(row["name"], {})[row["key"]] = _cell(row["whole"], row["columns"])
    readonly = {cells["readonly"] for cells in tables.values()}
    lines = [BEGIN, f"| table | `awa_runtime` | `awa_operator` | {TEAM} |", "|---|---|---|---|"]
    lines += [f"| `awa.{name}` | {cells['runtime']} | {cells['operator']} | {cells['team']} |"
              for name, cells in tables.items()]
    lines += ["", f"`awa_readonly`: {', '.join(sorted(readonly))} on every table, nothing else.", "",
              "| function (`SECURITY DEFINER`) | who may call it |", "|---|---|"]
    for row in conn.execute(FUNCTIONS_SQL, args).fetchall():
        callers = ([TEAM if key == "team" else f"`awa_{key}`" for key in row["callers"]]
                   + (["PUBLIC"] if row["public"] else []))
        nobody = "no role: only the schema's own functions and triggers"
        lines.append(f"| `{row['name']}` | {', '.join(callers) or nobody} |")
    lines.append(END)
    return "\n".join(lines)


def test_the_privileges_table_is_what_the_database_grants(dsn: str) -> None:
    layout = grants.role_layout(unique_prefix())
    admin = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
    try:
        with admin.transaction():
            for statement in layout.statements:
                if not statement.startswith("--"):
                    admin.execute(statement)  # type: ignore[arg-type]  # built from a checked prefix
        team = grants.owner_role(f"{layout.prefix}team", ["billing"])
        grants.apply_owner_role(dsn, team)
        granted = render(admin, layout, team.role)
    finally:
        drop_layout(admin, layout.prefix)
        admin.close()
    text = DOC.read_text()
    documented = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), text, re.DOTALL)
    assert documented is not None, f"docs/operations.md has no {BEGIN} block; it should read:\n{granted}"
    assert documented.group(0) == granted, f"docs/operations.md's table differs; the database grants:\n{granted}"
