"""A team reads its own alerts (S76, v033): a team's role sees the alerts, deliveries and
silences of its owners' schedules and the fleet's alerts, never another team's and never
the sinks (their addresses are secrets), so `check`, `alerts list` and `alerts silences`
work for it; an operator's answers are unchanged."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_helpers import awa, one_line_error
from owner_access_helpers import Teams, seed, teams

from awa_tui.engine import migrations
from awa_tui.engine.actions import grants

SECRET = "https://hooks.example.test/T0/B0/s3cret-path"
SINKS_REFUSED = ("error: permission denied: a team's role does not read the alert sinks (they hold webhook "
                 "addresses); its own alerts: `awa-tui alerts list`")


@pytest.fixture
def world(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[Teams]:
    """billing's and payroll's schedules (owner_access_helpers.seed), each failing once with
    an alert to a webhook sink, a fleet alert (nobody leads), and three silences: one of
    payroll's schedule, one of the owner billing, one of a filter."""
    seed(dsn)
    conn.execute("INSERT INTO awa.alert_sinks (name, kind, url) VALUES ('hook', 'webhook', %s)", (SECRET,))
    conn.execute("INSERT INTO awa.health_transitions (name, at, from_health, to_health, reason) VALUES "
                 "('invoice', now(), 'ok', 'failing', 'billing failed'), "
                 "('payroll-run', now(), 'ok', 'failing', 'payroll failed')")
    conn.execute("INSERT INTO awa.fleet_transitions (at, from_state, to_state, reason) "
                 "VALUES (now(), 'ok', 'no_leader', 'nobody leads')")
    conn.execute("INSERT INTO awa.alert_silences (name, owner, filter, until, reason, created_by) VALUES "
                 "('payroll-run', NULL, NULL, now() + interval '1 hour', 'payroll maintenance', 'ops'), "
                 "(NULL, 'billing', NULL, now() + interval '1 hour', 'billing maintenance', 'ops'), "
                 "(NULL, NULL, 'queue:default', now() + interval '1 hour', 'everyone', 'ops')")
    yield from teams(dsn, conn)


def _alerts(dsn: str) -> list[tuple[str, bool, str]]:
    result = awa("alerts", "list", "--json", "--dsn", dsn)
    assert result.returncode == 0, result.stderr
    return sorted((a["name"], a["fleet"], a["sink"]) for a in json.loads(result.stdout))


def _silences(dsn: str) -> list[str]:
    result = awa("alerts", "silences", "--json", "--dsn", dsn)
    assert result.returncode == 0, result.stderr
    return sorted(s["reason"] for s in json.loads(result.stdout))


def test_a_team_reads_its_own_and_the_fleets_alerts_and_its_silences(world: Teams) -> None:
    team, ops = world.dsns["billing"], world.dsns["operator"]
    fleet = [a for a in _alerts(ops) if a[1]]
    assert len(fleet) == 1  # the fleet's alert, routed to the sink that takes every alert
    # An operator sees every alert and every silence (control: unchanged by v033).
    assert _alerts(ops) == sorted([("invoice", False, "hook"), ("payroll-run", False, "hook"), *fleet])
    assert _silences(ops) == ["billing maintenance", "everyone", "payroll maintenance"]
    # billing's login: its schedule's alert and the fleet's, its owner's silence; not payroll's.
    assert _alerts(team) == sorted([("invoice", False, "hook"), *fleet])
    assert _silences(team) == ["billing maintenance"]


def test_hand_written_sql_by_a_team_finds_only_its_alert_rows_and_no_sink(world: Teams,
                                                                           conn: psycopg.Connection[Any]) -> None:
    with world.connect("billing") as team:
        assert [r["name"] for r in team.execute(
            "SELECT name FROM awa.alert_outbox WHERE NOT fleet ORDER BY name")] == ["invoice"]
        assert team.execute("SELECT count(*) AS n FROM awa.alert_outbox WHERE fleet").fetchone() == {"n": 1}
        seen = {r["outbox_id"] for r in team.execute("SELECT outbox_id FROM awa.alert_deliveries")}
        assert seen == {r["outbox_id"] for r in conn.execute(
            "SELECT d.outbox_id FROM awa.alert_deliveries d JOIN awa.alert_outbox o ON o.id = d.outbox_id "
            "WHERE o.fleet OR o.name = 'invoice'")}
        assert team.execute("SELECT count(*) AS n FROM awa.alert_deliveries d JOIN awa.alert_outbox o "
                            "ON o.id = d.outbox_id WHERE o.name = 'payroll-run'").fetchone() == {"n": 0}
        assert [r["reason"] for r in team.execute("SELECT reason FROM awa.alert_silences")] == ["billing maintenance"]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            team.execute("SELECT url FROM awa.alert_sinks")
    with world.connect("operator") as ops:  # control: the operator reads every row
        assert ops.execute("SELECT count(*) AS n FROM awa.alert_outbox WHERE NOT fleet").fetchone() == {"n": 2}


def test_check_answers_a_team_and_the_sinks_are_refused_in_one_line(world: Teams) -> None:
    team = world.dsns["billing"]
    checked = awa("check", "--dsn", team)
    assert (checked.returncode, checked.stderr) == (2, "")
    assert checked.stdout.splitlines()[0] == (
        "CRITICAL fleet no_leader: no live leader: no runtime holds the leader lock")
    assert "permission denied" not in checked.stdout
    refused = awa("alerts", "sinks", "list", "--dsn", team)
    assert one_line_error(refused) == SINKS_REFUSED
    assert SECRET not in refused.stderr
    listed = awa("alerts", "sinks", "list", "--json", "--dsn", world.dsns["operator"])  # control
    assert listed.returncode == 0, listed.stderr
    assert [s["name"] for s in json.loads(listed.stdout)] == ["hook"]


def test_undoing_team_alerts_takes_the_alert_tables_from_a_team(world: Teams, dsn: str,
                                                                conn: psycopg.Connection[Any]) -> None:
    """Below v033 a team reads none of the alert tables (as before: the control of the tests
    above), and after `migrate` and `db grants --owner-role` again it reads its own."""
    version = next(m.version for m in migrations.available() if m.name == "team_alerts")
    newer = [m.version for m in migrations.available() if m.version >= version]
    assert migrations.migrate_down(dsn, version - 1) == newer[::-1]
    secured = {r["relname"] for r in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'awa'::regnamespace AND relrowsecurity")}
    assert secured == set(grants.SCOPED_ROWS) - {"alert_outbox", "alert_deliveries", "alert_silences"}
    with world.connect("billing") as team, pytest.raises(psycopg.errors.InsufficientPrivilege):
        team.execute("SELECT name FROM awa.alert_outbox")  # without its policy it would read every team's
    assert migrations.migrate(dsn) == newer
    grants.apply_owner_role(dsn, grants.owner_role(world.team_role, ["billing"]))
    with world.connect("billing") as team:
        assert [r["name"] for r in team.execute(
            "SELECT name FROM awa.alert_outbox WHERE NOT fleet ORDER BY name")] == ["invoice"]
