"""S74: the overlap policy replace, exact instants, a real worker.

Every pass runs at an explicit `now`. A due instant whose schedule still has a job waiting
or running fires, and the same fire statement cancels that job: a waiting one outright, a
running one through the job runner's cancellation (its handler sees `job.cancelled`).
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from engine_helpers import at, fire_times, force, race, schedule_row

from awa_tui import Client
from awa_tui.engine.firing import evaluator
from awa_tui.engine.jobs.context import Job


def _jobs(conn: psycopg.Connection[Any], name: str) -> list[dict[str, Any]]:
    """Each job of the schedule, in id order: what the replace policy writes on it."""
    return conn.execute(
        "SELECT id, state, metadata ->> 'cron_fire_time' AS fire, metadata -> 'cron_replaced' AS replaced, "
        "metadata -> 'cron_replaced_by' AS replaced_by, finalized_at IS NOT NULL AS finalized, "
        "cancel_requested_at IS NOT NULL AS cancel_asked, "
        "(SELECT coalesce(jsonb_agg(jsonb_build_array(e ->> 'reason', e ->> 'error')), '[]') "
        " FROM jsonb_array_elements(errors) e) AS errors "
        "FROM awa.jobs WHERE metadata ->> 'cron_name' = %s ORDER BY id", (name,)).fetchall()


def _pin_created(conn: psycopg.Connection[Any], name: str) -> None:
    """Each job created 0.25 s after its instant: the sentences' lateness is then exact."""
    force(conn, "UPDATE awa.jobs SET created_at = (metadata ->> 'cron_fire_time')::timestamptz "
                "+ interval '250 milliseconds' WHERE metadata ->> 'cron_name' = %s", (name,))


class BlocksUntilCancelled:
    """The first job polls `job.cancelled` until it turns true, then stops as cancelled;
    later jobs return at once."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.saw_cancel = threading.Event()
        self.ran: list[str] = []

    def __call__(self, job: Job) -> None:
        self.ran.append(job.metadata["cron_fire_time"])
        if len(self.ran) == 1:
            self.started.set()
            for _ in range(600):  # 30 s at most, then fail loudly below
                if job.cancelled:
                    self.saw_cancel.set()
                    job.raise_if_cancelled()
                job.cancel_event.wait(0.05)
            raise AssertionError("the running job was never asked to stop")


def test_replace_cancels_the_running_job_cooperatively_and_the_new_one_runs(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    handler = BlocksUntilCancelled()
    client.register_handler("test.job", handler)
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace")
    [first] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    outcomes: list[Any] = []
    runner = threading.Thread(target=lambda: outcomes.extend(client.work_once(limit=1)))
    runner.start()
    assert handler.started.wait(30)
    result = client.evaluate(now=at("2025-01-01T00:02:00"))
    [second] = result.jobs
    assert (second.fire_time, result.replaced, result.skipped, result.lost_races) == (
        "2025-01-01T00:02:00Z", [("rep", first.id)], [], 0)
    # The fire asked the runtime running it; the handler sees `job.cancelled` and stops.
    runner.join(30)
    assert not runner.is_alive()
    assert handler.saw_cancel.is_set()
    assert [(job.id, state) for job, state in outcomes] == [(first.id, "cancelled")]
    assert [state for _, state in client.work_once()] == ["completed"]
    assert handler.ran == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]
    assert _jobs(conn, "rep") == [
        {"id": first.id, "state": "cancelled", "fire": "2025-01-01T00:01:00Z", "replaced": None,
         "replaced_by": second.id, "finalized": True, "cancel_asked": True,
         "errors": [["replaced", f"replaced by job {second.id}"]]},
        {"id": second.id, "state": "completed", "fire": "2025-01-01T00:02:00Z", "replaced": [first.id],
         "replaced_by": None, "finalized": True, "cancel_asked": False, "errors": []},
    ]
    row = schedule_row(conn, "rep")
    assert (row["last_enqueued_at"], row["fires_count"]) == (at("2025-01-01T00:02:00"), 2)
    # The ledger and `why` say which fire replaced which job.
    _pin_created(conn, "rep")
    verdicts = client.reads.ledger("rep", since=at("2025-01-01T00:00:30"), now=at("2025-01-01T00:02:30"))
    assert [(v.instant, v.verdict, v.result, v.replaced, v.replaced_by) for v in verdicts] == [
        (at("2025-01-01T00:01:00"), "fired", "cancelled", (), second.id),
        (at("2025-01-01T00:02:00"), "fired", "ok", (first.id,), None),
    ]
    assert client.reads.why("rep", at=at("2025-01-01T00:02:00"), now=at("2025-01-01T00:02:30")).text == (
        f"rep: due instant 2025-01-01T00:02:00Z: fired (job {second.id}, 0.25s late), ok; it replaced job "
        f"{first.id}, still waiting or running at this instant (the overlap policy replace).")
    assert client.reads.why("rep", at=at("2025-01-01T00:01:00"), now=at("2025-01-01T00:02:30")).text == (
        f"rep: due instant 2025-01-01T00:01:00Z: fired (job {first.id}, 0.25s late), cancelled: replaced by "
        f"job {second.id}.")


def test_replace_cancels_a_job_not_yet_running_outright(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace")
    [first] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    result = client.evaluate(now=at("2025-01-01T00:02:00"))
    [second] = result.jobs
    assert result.replaced == [("rep", first.id)]
    assert _jobs(conn, "rep") == [
        {"id": first.id, "state": "cancelled", "fire": "2025-01-01T00:01:00Z", "replaced": None,
         "replaced_by": second.id, "finalized": True, "cancel_asked": False,
         "errors": [["replaced", f"replaced by job {second.id}"]]},
        {"id": second.id, "state": "available", "fire": "2025-01-01T00:02:00Z", "replaced": [first.id],
         "replaced_by": None, "finalized": False, "cancel_asked": False, "errors": []},
    ]
    # Nothing runs the cancelled job: a worker claims only the new one.
    client.register_handler("test.job", lambda job: None)
    assert [(job.id, state) for job, state in client.work_once()] == [(second.id, "completed")]
    # Nothing is going any more: the next instant replaces nothing.
    third = client.evaluate(now=at("2025-01-01T00:03:00"))
    assert ([j.fire_time for j in third.jobs], third.replaced) == (["2025-01-01T00:03:00Z"], [])
    assert _jobs(conn, "rep")[-1]["replaced"] is None
    _pin_created(conn, "rep")
    assert client.reads.why("rep", at=at("2025-01-01T00:02:00"), now=at("2025-01-01T00:03:30")).text == (
        f"rep: due instant 2025-01-01T00:02:00Z: fired (job {second.id}, 0.25s late), ok; it replaced job "
        f"{first.id}, still waiting or running at this instant (the overlap policy replace).")


def test_a_retryable_job_is_replaced_too_and_the_manual_one_with_it(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    """Every job of the schedule still going is the previous fire's: one waiting to retry
    and one triggered by hand are cancelled by the same fire, both named by it."""
    def fail(job: Job) -> None:
        raise RuntimeError("boom")

    client.register_handler("test.job", fail)
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace", max_attempts=3)
    [first] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    assert [state for _, state in client.work_once()] == ["retryable"]
    manual = client.actions.trigger("rep", operator="ops@host")
    [second] = client.evaluate(now=at("2025-01-01T00:02:00")).jobs
    jobs = {j["id"]: j for j in _jobs(conn, "rep")}
    assert (jobs[first.id]["state"], jobs[first.id]["errors"]) == (
        "cancelled", [[None, "RuntimeError: boom"], ["replaced", f"replaced by job {second.id}"]])
    assert (jobs[manual.id]["state"], jobs[manual.id]["replaced_by"]) == ("cancelled", second.id)
    assert jobs[second.id]["replaced"] == sorted([first.id, manual.id])


def test_catch_up_fires_every_instant_and_cancels_only_jobs_of_earlier_fires(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    """Several instants in one pass fire as allow does; the pass's first job replaces what
    was going before the pass, none of the pass's own jobs is cancelled."""
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace", missed_fire_policy="catch_up")
    [first] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    result = client.evaluate(now=at("2025-01-01T00:04:00"))
    assert [j.fire_time for j in result.jobs] == [
        "2025-01-01T00:02:00Z", "2025-01-01T00:03:00Z", "2025-01-01T00:04:00Z"]
    assert (result.replaced, result.skipped) == ([("rep", first.id)], [])
    ids = [j.id for j in result.jobs]
    assert [(j["id"], j["state"], j["replaced"], j["replaced_by"]) for j in _jobs(conn, "rep")] == [
        (first.id, "cancelled", None, ids[0]),
        (ids[0], "available", [first.id], None),
        (ids[1], "available", None, None),
        (ids[2], "available", None, None),
    ]
    # The next pass replaces all three.
    later = client.evaluate(now=at("2025-01-01T00:05:00"))
    assert sorted(job_id for _, job_id in later.replaced) == ids
    assert _jobs(conn, "rep")[-1]["replaced"] == ids
    assert schedule_row(conn, "rep")["fires_count"] == 5


def test_replace_counts_toward_max_fires_as_allow_does(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace", missed_fire_policy="catch_up",
             max_fires=2)
    result = client.evaluate(now=at("2025-01-01T00:05:00"))
    assert [j.fire_time for j in result.jobs] == ["2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"]
    row = schedule_row(conn, "rep")
    assert (row["fires_count"], row["finished_at"] is not None) == (2, True)


def test_one_pass_cancels_only_the_replace_schedules_jobs_of_a_mixed_batch(
    client: Client, conn: psycopg.Connection[Any], register: Any
) -> None:
    """allow, skip and buffer_one decide as before beside replace schedules in the same
    statement: their jobs are never cancelled."""
    cases = {  # name: (policy, jobs it has, enqueued?)
        " a rep": ("replace", ["running", "available"], True),
        "b, allow": ("allow", ["available"], True),
        'c "skip"': ("skip", ["running"], False),
        "d {buffer}": ("buffer_one", ["running"], True),
        "e idle rep": ("replace", ["completed"], True),
        "f\\rep": ("replace", ["retryable"], True),
        "zz buffer": ("buffer_one", ["available"], False),
    }
    for name, (policy, _, _) in cases.items():
        register(name, "* * * * *", last="2025-01-01T00:00:00", overlap=policy)
    seeded: dict[str, list[int]] = {}
    for name, (_, states, _) in cases.items():
        for state in states:
            row = conn.execute("INSERT INTO awa.jobs (kind, state, metadata) VALUES ('test.job', %s, "
                               "jsonb_build_object('cron_name', %s::text, 'cron_fire_time', 'earlier')) RETURNING id",
                               (state, name)).fetchone()
            assert row is not None
            seeded.setdefault(name, []).append(row["id"])
    result = client.evaluate(now=at("2025-01-01T00:01:00"))
    assert sorted(j.name for j in result.jobs) == sorted(n for n, (_, _, fires) in cases.items() if fires)
    assert sorted(n for n, _ in result.skipped) == sorted(n for n, (_, _, fires) in cases.items() if not fires)
    assert sorted(result.replaced) == sorted([(" a rep", i) for i in seeded[" a rep"]]
                                             + [("f\\rep", seeded["f\\rep"][0])])
    states = {r["id"]: (r["state"], r["cancel_requested_at"] is not None) for r in conn.execute(
        "SELECT id, state, cancel_requested_at FROM awa.jobs WHERE id = ANY(%s)",
        ([i for ids in seeded.values() for i in ids],))}
    expected = {
        seeded[" a rep"][0]: ("running", True), seeded[" a rep"][1]: ("cancelled", False),
        seeded["b, allow"][0]: ("available", False), seeded['c "skip"'][0]: ("running", False),
        seeded["d {buffer}"][0]: ("running", False), seeded["e idle rep"][0]: ("completed", False),
        seeded["f\\rep"][0]: ("cancelled", False), seeded["zz buffer"][0]: ("available", False),
    }
    assert states == expected
    assert result.lost_races == 0 and result.errors == []


def test_racing_evaluators_fire_once_and_cancel_once(dsn: str, conn: psycopg.Connection[Any]) -> None:
    clients = [Client(dsn, operator=f"racer{i}@test") for i in range(3)]
    try:
        for client in clients:
            client.periodic("rep", "* * * * * *", "k", overlap="replace")
            client.sync()
        base = at("2025-01-01T00:00:00")
        force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, created_at = %s, next_fire_at = NULL",
              (base, base))
        nows = [base + timedelta(seconds=s, milliseconds=100) for s in range(1, 21)]
        results = race(clients, nows)
        assert fire_times(conn, "rep") == [
            (base + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s in range(1, 21)]
        jobs = _jobs(conn, "rep")
        ids = [j["id"] for j in jobs]
        # Each job but the last was cancelled exactly once, by the very next fire, which says so.
        assert [(j["state"], j["replaced_by"], j["errors"]) for j in jobs] == [
            ("cancelled", nxt, [["replaced", f"replaced by job {nxt}"]]) for nxt in ids[1:]
        ] + [("available", None, [])]
        assert [j["replaced"] for j in jobs] == [None] + [[prev] for prev in ids[:-1]]
        replaced = Counter(job_id for r in results for _, job_id in r.replaced)
        assert replaced == Counter(ids[:-1])
        assert sum(r.fired for r in results) == 20
    finally:
        for client in clients:
            client.close()


def test_a_missing_cancel_is_detected(
    client: Client, conn: psycopg.Connection[Any], register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control: the statement with its cancelling step switched off fires the new
    job and leaves the previous one waiting; the assertions of the tests above see it."""
    cancel = "      AND j.id = r.id AND j.state IN ('available', 'running', 'retryable')\n"
    assert cancel in evaluator.FIRE_REPLACE_SQL
    monkeypatch.setattr(evaluator, "FIRE_REPLACE_SQL", evaluator.FIRE_REPLACE_SQL.replace(cancel, "      AND false\n"))
    register("rep", "* * * * *", last="2025-01-01T00:00:00", overlap="replace")
    [first] = client.evaluate(now=at("2025-01-01T00:01:00")).jobs
    result = client.evaluate(now=at("2025-01-01T00:02:00"))
    assert result.replaced == []
    assert [(j["id"], j["state"], j["replaced_by"]) for j in _jobs(conn, "rep")] == [
        (first.id, "available", None), (result.jobs[0].id, "available", None)]


def test_no_replace_schedule_no_scan_of_jobs(conn: psycopg.Connection[Any], client: Client) -> None:
    """The fire path pays nothing for replace when no schedule of a chunk has it: such a
    chunk is sent the statement without the replace steps (the one of before replace, valid
    on a schema rolled back below v020), and with one replace schedule the statement with
    them probes its jobs once (the control)."""
    for name, policy in (("a", "allow"), ("b", "skip"), ("c", "buffer_one"), ("d", "replace")):
        client.periodic(name, "* * * * *", "k", overlap=policy)
    client.sync()
    force(conn, "UPDATE awa.cron_jobs SET last_enqueued_at = %s, next_fire_at = NULL", (at("2025-01-01T00:00:00"),))
    now = at("2025-01-01T00:01:00")
    assert all(part not in evaluator.FIRE_BATCH_SQL for part in ("prior AS", "replaced AS", "cancel_requested_at"))

    def executed(names: set[str]) -> dict[str, int]:
        """The loops of the `prior` and `replaced` parts of the statement a chunk of `names`
        is sent, explained with ANALYZE and rolled back."""
        rows = [r for r in evaluator.due_schedules(conn, now) if r["name"] in names]
        plans = [p for p in (evaluator.plan_fires(r, now, 1000)[0] for r in rows) if p is not None]
        params = evaluator._batch_params(sorted(plans, key=lambda p: p.name), now)
        sql = evaluator.FIRE_BATCH_SQL if params["replacing"] == "{}" else evaluator.FIRE_REPLACE_SQL
        loops: dict[str, int] = {}
        with conn.transaction():
            plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params, prepare=False).fetchone()
            assert plan is not None

            def walk(node: dict[str, Any], cte: str | None) -> None:
                part = node.get("Subplan Name", "")
                name = part.removeprefix("CTE ") if part.startswith("CTE ") else cte
                if name in ("prior", "replaced") and node.get("Relation Name") == "jobs" and (
                        node["Node Type"].endswith("Scan")):
                    loops[name] = loops.get(name, 0) + node["Actual Loops"]
                for child in node.get("Plans", []):
                    walk(child, name)

            walk(plan["QUERY PLAN"][0]["Plan"], None)
            raise psycopg.Rollback()
        return loops

    assert executed({"a", "b", "c"}) == {}
    # The control: one replace schedule in the chunk, and its jobs are probed once.
    assert executed({"a", "b", "c", "d"})["prior"] == 1
