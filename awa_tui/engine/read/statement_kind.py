"""The kind of a statement another session runs (`ALTER ROLE`, `UPDATE awa.cron_jobs`),
never its text: its literals may be secrets (a password, a token in a job's args) that
Postgres itself hides from roles that may not see them, and a blocker report is read by
every awa role.

The kind is built only from an allow-list of command words, plus the unquoted name of the
table a data or lock command names. Anything else (a literal, a quoted name, a role's
name) stops the reading, so what comes out cannot carry a literal.
"""

from __future__ import annotations

import re

# Words that may begin a statement, and the words that may follow them in its kind.
COMMANDS = frozenset({
    "ABORT", "ALTER", "ANALYZE", "BEGIN", "CALL", "CHECKPOINT", "CLOSE", "CLUSTER", "COMMENT", "COMMIT", "COPY",
    "CREATE", "DEALLOCATE", "DECLARE", "DELETE", "DISCARD", "DO", "DROP", "END", "EXECUTE", "EXPLAIN", "FETCH",
    "GRANT", "IMPORT", "INSERT", "LISTEN", "LOAD", "LOCK", "MERGE", "MOVE", "NOTIFY", "PREPARE", "REASSIGN",
    "REFRESH", "REINDEX", "RELEASE", "RESET", "REVOKE", "ROLLBACK", "SAVEPOINT", "SECURITY", "SELECT", "SET",
    "SHOW", "START", "TABLE", "TRUNCATE", "UNLISTEN", "UPDATE", "VACUUM", "VALUES", "WITH",
})
OBJECT_WORDS = frozenset({
    "ACCESS", "AGGREGATE", "CAST", "COLLATION", "CONSTRAINT", "CONVERSION", "DATA", "DATABASE", "DEFAULT",
    "DOMAIN", "EVENT", "EXTENSION", "FOREIGN", "FUNCTION", "GROUP", "INDEX", "LANGUAGE", "LARGE", "MATERIALIZED",
    "METHOD", "OBJECT", "OPERATOR", "OR", "OWNED", "POLICY", "PRIVILEGES", "PROCEDURE", "PUBLICATION", "REPLACE",
    "ROLE", "ROUTINE", "RULE", "SCHEMA", "SEQUENCE", "SERVER", "STATISTICS", "SUBSCRIPTION", "SYSTEM", "TABLE",
    "TABLESPACE", "TEMP", "TEMPORARY", "TEXT", "TRANSACTION", "TRIGGER", "TYPE", "UNIQUE", "UNLOGGED", "USER",
    "VIEW", "WRAPPER", "CONCURRENTLY", "ON", "RECURSIVE", "WORK", "ISOLATION", "LEVEL", "SESSION", "LOCAL",
})
# Commands whose kind names the table they act on (the name, unquoted, is no literal).
NAMES_A_TABLE = {"UPDATE": (), "DELETE": ("FROM",), "INSERT": ("INTO",), "LOCK": ("TABLE",),
                 "TRUNCATE": ("TABLE",), "COPY": (), "MERGE": ("INTO",)}
TABLE_WORD_OPTIONAL = frozenset({"LOCK", "TRUNCATE"})  # `LOCK awa.jobs` is `LOCK TABLE awa.jobs`
MAX_WORDS = 4

_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_WORD = re.compile(r"[A-Za-z]+(?![A-Za-z0-9_$])")
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}(?:\.[A-Za-z_][A-Za-z0-9_$]{0,62})?")


def statement_kind(sql: str) -> str:
    """`ALTER ROLE` for `ALTER ROLE ro1 PASSWORD '...'`, `UPDATE awa.cron_jobs` for an
    update of that table, '' for no statement or one that is not recognised."""
    rest = _COMMENT.sub(" ", sql).lstrip(" \t\r\n(;")
    words: list[str] = []
    while rest and len(words) < MAX_WORDS:
        match = _WORD.match(rest)
        if match is None:
            break
        word = match.group().upper()
        if not (word in COMMANDS if not words else word in OBJECT_WORDS):
            break
        words.append(word)
        rest = rest[match.end():].lstrip()
    if not words:
        return ""
    table = _named_table(words, rest)
    return " ".join(words + ([table] if table else []))


def _named_table(words: list[str], rest: str) -> str | None:
    """The unquoted table a data or lock command names right after its words; None when it
    is not one of those, or the name is quoted or schema-less in a way we cannot tell."""
    leads = NAMES_A_TABLE.get(words[0])
    if leads is None:
        return None
    tail = words[1:]
    if tail and tuple(tail) != leads:
        return None
    if not tail and leads:
        match = _WORD.match(rest)
        if match is not None and match.group().upper() in leads:
            words.append(match.group().upper())
            rest = rest[match.end():].lstrip()
        elif words[0] not in TABLE_WORD_OPTIONAL:
            return None
    only = re.match(r"ONLY\b\s*", rest, re.IGNORECASE)
    if only:
        rest = rest[only.end():]
    match = _TABLE.match(rest)
    if match is None or match.group().upper() in {"SET", "WHERE", "VALUES", "SELECT", "AS", "USING"}:
        return None
    return match.group()
