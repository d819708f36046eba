"""Retry policy per kind: the backoff (exponential with jitter, fixed, or a function), which
exceptions retry and which discard at once; the job's max attempts still bound it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from awa_tui import Client, Job, RetryPolicy, ValidationError


class Transient(Exception):
    pass


class Fatal(Exception):
    pass


def _enqueue(client: Client, kind: str, max_attempts: int = 5) -> int:
    return client.enqueue(kind, max_attempts=max_attempts)


def _wait_set(conn: Any, job_id: int) -> tuple[str, timedelta | None]:
    row = conn.execute("SELECT state, CASE WHEN state = 'retryable' THEN run_at - attempted_at END AS wait "
                       "FROM awa.jobs WHERE id = %s", (job_id,)).fetchone()
    return row["state"], row["wait"]


def _raising(exc: Exception) -> Any:
    def handler(job: Job) -> None:
        raise exc
    return handler


def _close(wait: timedelta | None, expected: timedelta) -> bool:
    """run_at is now() + delay after attempted_at: within the statement's gap of the delay."""
    return wait is not None and expected <= wait < expected + timedelta(seconds=1)


def test_a_fixed_backoff(client: Client, conn: Any) -> None:
    client.register_handler("k", _raising(Transient("x")), retry=RetryPolicy(backoff="fixed",
                                                                               base=timedelta(seconds=30)))
    job_id = _enqueue(client, "k")
    client.work_once()
    state, wait = _wait_set(conn, job_id)
    assert state == "retryable" and _close(wait, timedelta(seconds=30))


def test_a_backoff_function_of_the_attempt(client: Client, conn: Any) -> None:
    client.register_handler("k", _raising(Transient("x")),
                            retry=RetryPolicy(backoff=lambda attempt: timedelta(minutes=attempt * 7)))
    job_id = _enqueue(client, "k")
    client.work_once()
    state, wait = _wait_set(conn, job_id)
    assert state == "retryable" and _close(wait, timedelta(minutes=7))


def test_exponential_with_jitter_stays_within_its_bounds() -> None:
    policy = RetryPolicy(base=timedelta(seconds=2), cap=timedelta(seconds=60), jitter=0.5)
    delays = [policy.delay(3).total_seconds() for _ in range(200)]
    assert all(16 <= d <= 24 for d in delays) and len(set(delays)) > 1
    assert all(60 <= policy.delay(10).total_seconds() <= 90 for _ in range(50))
    assert [RetryPolicy().delay(a).total_seconds() for a in (1, 2, 3, 12)] == [2, 4, 8, 3600]


def test_discard_on_discards_at_once_with_attempts_left(client: Client, conn: Any) -> None:
    client.register_handler("k", _raising(Fatal("bad input")), retry=RetryPolicy(discard_on=(Fatal,)))
    job_id = _enqueue(client, "k", max_attempts=10)
    assert [state for _, state in client.work_once()] == ["discarded"]
    assert _wait_set(conn, job_id) == ("discarded", None)


def test_retry_on_retries_only_those(client: Client, conn: Any) -> None:
    client.register_handler("t", _raising(Transient("later")), retry=RetryPolicy(retry_on=(Transient,)))
    client.register_handler("f", _raising(Fatal("never")), retry=RetryPolicy(retry_on=(Transient,)))
    _enqueue(client, "t")
    _enqueue(client, "f")
    assert sorted((job.kind, state) for job, state in client.work_once()) == [("f", "discarded"), ("t", "retryable")]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"backoff": "linear"}, "backoff: exponential, fixed or a function of the attempt, got 'linear'"),
    ({"jitter": 2.0}, "jitter: a fraction between 0 and 1, got 2.0"),
    ({"base": timedelta(0)}, "base: must be positive and at most cap"),
])
def test_a_policy_is_checked(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        RetryPolicy(**kwargs)


def test_a_schedule_has_its_own_timeout_and_retries_over_its_kinds(
        client: Client, conn: Any, register: Any) -> None:
    """Two schedules of one kind: `strict`'s jobs are discarded at once on the error its
    policy discards on; `lenient`'s are retried as the kind says."""
    from engine_helpers import at

    client.register_handler("test.job", _raising(Fatal("bad")))
    client.job_policy("strict", retry=RetryPolicy(discard_on=(Fatal,)), timeout=timedelta(seconds=5))
    register("strict", "* * * * *", last="2025-01-01T00:00:00")
    register("lenient", "* * * * *", last="2025-01-01T00:00:00")
    client.evaluate(now=at("2025-01-01T00:01:00"))
    assert sorted((job.schedule, state) for job, state in client.work_once()) == [
        ("lenient", "retryable"), ("strict", "discarded")]


def test_a_schedule_policy_is_checked(client: Client) -> None:
    with pytest.raises(ValidationError, match="timeout: must be more than 0"):
        client.job_policy("strict", timeout=-1)
