"""A property-based model of ownership against a real database.

Hypothesis drives deploys, heartbeats, crashes, leader passes, operator actions, older
binaries' statements and the passing of time (virtual, injected as `now`), and after every
step checks: no retired schedule fires (and none replays its retired period), nothing is
deleted, no name changes owner except by an operator, no fire is doubled, reconciliation
never retires a name that a fresh declaration still wants, and a certificate whose count
matches really means "in sync" (the reconciler's fast path skips nothing).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from test_fences import OLD_ENQUEUE, OLD_UPSERT

from awa_tui import Client, Conflict, NotFound
from awa_tui.engine.ownership import agreement

NAMES = ("n1", "n2", "n3", "n4")
OWNERS = ("a", "b")
SLOTS = {"a1": "a", "a2": "a", "b1": "b"}
EXPRS = ("0 * * * *", "*/30 * * * *")
GRACES = (timedelta(0), timedelta(seconds=20), timedelta(seconds=60))
TICKS = (1, 10, 25)
SILENCES = (40, 3600)
OPERATOR_ACTIONS = ("adopt", "transfer", "retire", "restore", "trigger", "retire_owner", "restore_owner")


def _clone(admin_dsn: str, template: str) -> tuple[str, str]:
    name = f"awa_sm_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
            sql.Identifier(name), sql.Identifier(template)))
    params = conninfo_to_dict(admin_dsn)
    params["dbname"] = name
    return name, make_conninfo(**params)


def _drop(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def make_machine(admin_dsn: str, template: str) -> type[RuleBasedStateMachine]:
    class Ownership(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.db_name, self.dsn = _clone(admin_dsn, template)
            self.conn = psycopg.connect(self.dsn, autocommit=True, row_factory=dict_row)
            self.now: datetime = self.conn.execute("SELECT now() AS t").fetchone()["t"]
            self.operator = Client(self.dsn, operator="machine@test")
            self.leader = Client(self.dsn, operator="leader@test")
            self.runtimes: dict[str, Client] = {}
            self.rows = self._rows()
            self.seen_names: set[str] = set()
            self.last_job = 0
            self.retired_before: set[str] = set()
            self.boundary: dict[str, datetime] = {}
            self.owner_change_ok: set[str] = set()

        def teardown(self) -> None:
            for client in (*self.runtimes.values(), self.operator, self.leader):
                client.db.close_all()
            self.conn.close()
            _drop(admin_dsn, self.db_name)

        # --- helpers -------------------------------------------------------------------

        def _rows(self) -> dict[str, dict[str, Any]]:
            rows = self.conn.execute("SELECT * FROM awa.cron_jobs").fetchall()
            return {r["name"]: r for r in rows}

        def _before_step(self) -> None:
            self.rows = self._rows()
            self.retired_before = {n for n, r in self.rows.items() if r["retired_at"] is not None}
            self.owner_change_ok = set()

        def _live_manifests(self) -> dict[str, list[set[str]]]:
            """Per owner, the name sets of fresh declarations (crashed ones count until stale)."""
            rows = self.conn.execute(
                "SELECT owner, manifest FROM awa.runtime_instances WHERE authoritative AND stopped_at IS NULL "
                "AND %s::timestamptz - last_seen_at <= greatest(interval '30 s', 3 * snapshot_interval)",
                (self.now,),
            ).fetchall()
            out: dict[str, list[set[str]]] = {}
            for r in rows:
                out.setdefault(r["owner"], []).append(set(r["manifest"]))
            return out

        # --- deploys and runtimes --------------------------------------------------------

        @rule(slot=st.sampled_from(sorted(SLOTS)), names=st.sets(st.sampled_from(NAMES), max_size=3),
              expr=st.sampled_from(EXPRS), grace=st.sampled_from(GRACES))
        def deploy(self, slot: str, names: set[str], expr: str, grace: timedelta) -> None:
            self._before_step()
            owner = SLOTS[slot]
            old = self.runtimes.pop(slot, None)
            if old is not None:
                old.close()  # a clean stop ends its declaration at once
            client = Client(self.dsn, owner=owner, authoritative=True, retire_grace=grace,
                            operator="deploy@test")
            for name in sorted(names):
                client.periodic(name, expr, "machine.job")
            foreign = {n for n in names if n in self.rows and self.rows[n]["owner"] not in (None, owner)}
            try:
                client.sync()
            except Conflict as exc:
                assert foreign, f"startup failed without a foreign name: {exc}"
                assert owner in str(exc) and any(self.rows[n]["owner"] in str(exc) for n in foreign)
                event("startup refused: foreign name")
                client.db.close_all()
                return
            assert not foreign, f"startup accepted foreign names {foreign}"
            client.runtime.publish(now=self.now)
            self.runtimes[slot] = client

        @rule(slot=st.sampled_from(sorted(SLOTS)))
        def crash(self, slot: str) -> None:
            self._before_step()
            client = self.runtimes.pop(slot, None)
            if client is not None:
                client.db.close_all()  # no final snapshot: it goes stale

        @rule(seconds=st.sampled_from(SILENCES))
        def silence(self, seconds: int) -> None:
            """Time passes with no evidence at all (the database was unreachable...)."""
            self._before_step()
            self.now += timedelta(seconds=seconds)

        @rule(seconds=st.sampled_from(TICKS))
        def tick(self, seconds: int) -> None:
            """Time passes; live runtimes publish; the leader reconciles, then fires."""
            self._before_step()
            self.now += timedelta(seconds=seconds)
            for client in self.runtimes.values():
                client.runtime.publish(now=self.now)
            wanted = self._live_manifests()
            for result in self.leader.runtime.reconcile(now=self.now):
                for key in ("inserted", "updated", "retired"):
                    if result[key]:
                        event(f"reconcile {key}")
                for name in result["retired"]:
                    assert all(name not in names for names in wanted.get(result["owner"], [])), (
                        f"{name} retired while a fresh declaration of {result['owner']} wants it")
            self.leader.evaluate(now=self.now)

        # --- operators ---------------------------------------------------------------------

        def _refusal(self, action: str, name: str, owner: str) -> tuple[type[Exception], str] | None:
            """The one refusal an operator action must meet in the state before it (the model's
            own rules, written out), or None when it must succeed."""
            row = self.rows.get(name)
            if action in ("retire_owner", "restore_owner"):
                mine = [r for r in self.rows.values() if r["owner"] == owner]
                if not mine:
                    return NotFound, f"owner {owner!r} has no schedules"
                if action == "retire_owner" and all(r["retired_at"] is not None for r in mine):
                    return Conflict, f"every schedule of owner {owner!r} is already retired"
                if action == "restore_owner" and all(r["retired_at"] is None for r in mine):
                    return Conflict, f"owner {owner!r} has no retired schedules"
                return None
            if row is None:
                return NotFound, f"unknown schedule {name!r}"
            if action in ("adopt", "transfer") and row["owner"] == owner:
                return Conflict, f"schedule {name!r} is already owned by {owner!r}"
            if action == "adopt" and row["owner"] is not None:
                return Conflict, f"schedule {name!r} is owned by {row['owner']!r}; use transfer to move it to {owner!r}"
            if action == "transfer" and row["owner"] is None:
                return Conflict, f"schedule {name!r} is unowned; use adopt to give it to {owner!r}"
            if action == "retire" and row["retired_at"] is not None:
                return Conflict, f"schedule {name!r} is already retired (by {row['retired_by']})"
            if action == "restore" and row["retired_at"] is None:
                return Conflict, f"schedule {name!r} is not retired"
            if action == "trigger" and row["retired_at"] is not None:
                return Conflict, f"schedule {name!r} is retired; restore it before triggering"
            return None

        @rule(action=st.sampled_from(OPERATOR_ACTIONS), name=st.sampled_from(NAMES), owner=st.sampled_from(OWNERS))
        def operate(self, action: str, name: str, owner: str) -> None:
            self._before_step()
            expected = self._refusal(action, name, owner)
            if action in ("adopt", "transfer") and expected is None:
                self.owner_change_ok = {name}
            try:
                if action in ("adopt", "transfer"):
                    getattr(self.operator.actions, action)(name, owner, now=self.now)
                elif action in ("retire", "restore"):
                    getattr(self.operator.actions, action)(name, now=self.now)
                elif action == "trigger":
                    self.operator.actions.trigger(name)
                    assert name not in self.retired_before, "a retired schedule was triggered"
                else:
                    result = getattr(self.operator.actions, action)(owner, now=self.now)
                    if action == "restore_owner":
                        self.boundary.update(dict.fromkeys(result.names, self.now))
                if action == "restore":
                    self.boundary[name] = self.now
            except (Conflict, NotFound) as exc:
                # Refused: exactly the expected refusal (which error, for which reason), and
                # nothing changed.
                assert expected is not None, f"{action} {name} {owner} refused unexpectedly: {exc!r}"
                assert (type(exc), str(exc)) == expected, f"{action} {name} {owner}"
                assert self._rows() == self.rows, f"refused {action} changed a schedule"
                event(f"refused: {action}")
                return
            assert expected is None, f"{action} {name} {owner} done, but should be refused: {expected}"

        # --- older binaries and additive runtimes -----------------------------------------

        @rule(action=st.sampled_from(("additive_sync", "old_upsert", "old_enqueue", "delete")),
              name=st.sampled_from(NAMES))
        def legacy(self, action: str, name: str) -> None:
            self._before_step()
            before = self.rows.get(name)
            if action == "additive_sync":
                client = Client(self.dsn, operator="additive@test")
                client.periodic(name, "*/30 * * * *", "additive.job")
                client.sync()
                client.close()
            elif action == "old_upsert":
                self.conn.execute(OLD_UPSERT, {"name": name})
                after = self._rows()[name]
                if before is not None and before["retired_at"] is not None:
                    assert after == before, f"an old UPSERT changed retired row {name}"
                elif before is not None and before["owner"] is not None:
                    # An owned definition is untouched (only its updated_at may be bumped).
                    assert {**after, "updated_at": None} == {**before, "updated_at": None}, (
                        f"an old UPSERT changed managed row {name}")
            elif before is not None and before["retired_at"] is not None:
                if action == "old_enqueue":
                    fired = self.conn.execute(
                        OLD_ENQUEUE, {"name": name, "fire": self.now, "expected": before["last_enqueued_at"]}
                    ).fetchall()
                    assert fired == [], "an old atomic enqueue fired a retired schedule"
                else:
                    with pytest.raises(psycopg.errors.RaiseException) as refused, self.conn.transaction():
                        self.conn.execute("DELETE FROM awa.cron_jobs WHERE name = %s", (name,))
                    assert str(refused.value).splitlines()[0] == (
                        f"schedule {name} is retired: a retired schedule cannot be deleted")
                assert self._rows()[name] == before

        # --- invariants ----------------------------------------------------------------------

        @invariant()
        def no_retired_schedule_fires_and_no_fire_replays(self) -> None:
            jobs = self.conn.execute(
                "SELECT id, metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire, "
                "coalesce((metadata ->> 'triggered_manually')::boolean, false) AS manual "
                "FROM awa.jobs WHERE id > %s ORDER BY id", (self.last_job,)
            ).fetchall()
            for job in jobs:
                assert job["name"] not in self.retired_before, f"retired {job['name']} produced job {job['id']}"
                if not job["manual"] and job["name"] in self.boundary:
                    fire = datetime.fromisoformat(job["fire"].replace("Z", "+00:00"))
                    assert fire > self.boundary[job["name"]], f"{job['name']} replayed {fire}"
                self.last_job = job["id"]

        @invariant()
        def nothing_is_deleted(self) -> None:
            names = set(self._rows())
            assert self.seen_names <= names, f"deleted: {self.seen_names - names}"
            self.seen_names = names

        @invariant()
        def owners_change_only_by_operators(self) -> None:
            for name, now_row in self._rows().items():
                before = self.rows.get(name)
                if before is not None and before["owner"] != now_row["owner"]:
                    assert name in self.owner_change_ok, f"{name}: {before['owner']} -> {now_row['owner']}"

        @invariant()
        def a_certificate_with_a_matching_count_means_in_sync(self) -> None:
            """The fast path of reconciliation (S31) is sound: it skips exactly nothing."""
            owners = self.conn.execute(
                "SELECT o.owner, o.certificate_size, r.instance_id FROM awa.owners o "
                "JOIN LATERAL (SELECT instance_id FROM awa.runtime_instances "
                "              WHERE manifest_hash = o.certificate_hash LIMIT 1) r ON true "
                "WHERE (SELECT count(*) FROM awa.cron_jobs c WHERE c.owner = o.owner AND c.retired_at IS NULL)"
                "      = o.certificate_size"
            ).fetchall()
            for o in owners:
                params = {"owner": o["owner"], "source": o["instance_id"]}
                assert self.conn.execute(agreement.DIFF_SQL, params).fetchall() == [], o["owner"]
                assert self.conn.execute(agreement.ABSENT_SQL, params).fetchall() == [], o["owner"]

        @invariant()
        def no_fire_is_doubled(self) -> None:
            doubled = self.conn.execute(
                "SELECT metadata ->> 'cron_name' AS name, metadata ->> 'cron_fire_time' AS fire, count(*) "
                "FROM awa.jobs WHERE metadata ? 'cron_fire_time' GROUP BY 1, 2 HAVING count(*) > 1"
            ).fetchall()
            assert doubled == []

    return Ownership


def test_ownership_state_machine(pg_admin_dsn, template_db):
    machine = make_machine(pg_admin_dsn, template_db)
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=15, stateful_step_count=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]),
    )
