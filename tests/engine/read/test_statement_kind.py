"""A blocker's statement is reported by kind only: command words and an unquoted table
name, never a literal (the expected kinds are written out by hand)."""

from __future__ import annotations

import pytest

from awa_tui.engine.read.statement_kind import statement_kind


@pytest.mark.parametrize(("sql", "kind"), [
    ("ALTER ROLE ro1 PASSWORD 'Hunter2-S3cret'", "ALTER ROLE"),
    ("alter user bob with password $$Hunter2-S3cret$$", "ALTER USER"),
    ("UPDATE awa.cron_jobs SET args = '{\"token\": \"s3cret\"}' WHERE name = 'x'", "UPDATE awa.cron_jobs"),
    ("update only awa.cron_jobs set retired_at = now()", "UPDATE awa.cron_jobs"),
    ("/* note 's3cret' */ -- more s3cret\n DELETE FROM awa.jobs WHERE id = 1", "DELETE FROM awa.jobs"),
    ("INSERT INTO awa.jobs (args) VALUES ('s3cret')", "INSERT INTO awa.jobs"),
    ("LOCK TABLE awa.jobs IN ACCESS EXCLUSIVE MODE", "LOCK TABLE awa.jobs"),
    ("lock awa.jobs", "LOCK awa.jobs"),
    ("TRUNCATE awa.jobs", "TRUNCATE awa.jobs"),
    ("SELECT set_config('app.token', 's3cret', false)", "SELECT"),
    ("CREATE OR REPLACE FUNCTION s3cret() RETURNS int", "CREATE OR REPLACE FUNCTION"),
    ('UPDATE "s3cret".x SET y = 1', "UPDATE"),  # a quoted name could hold anything: left out
    ("ALTER ROLE1 x", "ALTER"),  # a word glued to more is no command word
    ("s3cret", ""),
    ("'s3cret'", ""),
    ("", ""),
])
def test_the_kind_of_a_statement(sql: str, kind: str) -> None:
    assert statement_kind(sql) == kind
    assert "s3cret" not in statement_kind(sql).lower() and "hunter2" not in statement_kind(sql).lower()
