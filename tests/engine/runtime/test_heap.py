"""A runtime process's heap (runtime/heap.py, issue 18): its schedules are registered with
the cycle collector off, then what is alive is frozen, so no later collection walks them.

Each case runs in a fresh interpreter: the collector's state is the whole process's, and
freezing pytest's own heap would change every test after it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent("""
    import gc, json, sys
    from awa_tui import Client
    from awa_tui.engine.runtime.heap import registered_then_frozen

    N, MODE = int(sys.argv[1]), sys.argv[2]  # ok | fail | plain (the control: registered as is)
    seen = {}

    def register():
        client = Client("postgresql://nobody@127.0.0.1:1/none", operator="test")  # never connects
        seen["enabled_inside"] = gc.isenabled()
        before = gc.get_stats()[2]["collections"]
        for i in range(N):
            client.periodic(f"heap-{i:06d}", f"{i % 60} * * * *", "heap.kind")
        seen["full_inside"] = gc.get_stats()[2]["collections"] - before
        if MODE == "fail":
            raise RuntimeError("the app's own bug")
        return client

    try:
        if MODE == "plain":
            client, frozen = register(), gc.get_freeze_count()
        else:
            client, frozen = registered_then_frozen(register)
        # Schedules a collection can still walk (frozen ones are in no generation).
        walkable = sum(1 for o in gc.get_objects() if type(o).__name__ == "Schedule")
        out = {"registered": len(client.schedules), "frozen": frozen, "walkable_schedules": walkable}
    except RuntimeError as exc:
        out = {"raised": str(exc), "frozen": gc.get_freeze_count()}
    out.update(seen, enabled_after=gc.isenabled())
    print(json.dumps(out))
""")


def _run(n: int, mode: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(n), mode], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def test_registration_runs_without_the_collector_then_the_registry_is_frozen() -> None:
    got = _run(50000, "ok")
    assert got["registered"] == 50000
    assert got["enabled_inside"] is False
    assert got["full_inside"] == 0  # no full collection while 50k schedules were declared
    assert got["enabled_after"] is True
    assert got["walkable_schedules"] == 0  # none left for a collection to walk
    assert isinstance(got["frozen"], int) and got["frozen"] >= 50000


def test_the_negative_control_schedules_are_walked_without_it() -> None:
    # The same registration outside registered_then_frozen: the collector ran during it and
    # every schedule stays where a full collection walks it.
    got = _run(50000, "plain")
    assert got["registered"] == 50000
    assert got["enabled_inside"] is True
    assert got["full_inside"] >= 1  # the collector walked the growing registry (twice, as measured)
    assert got["walkable_schedules"] == 50000
    assert got["frozen"] == 0


def test_a_registration_that_raises_freezes_nothing_and_gives_the_collector_back() -> None:
    got = _run(100, "fail")
    assert got["raised"] == "the app's own bug"
    assert got["frozen"] == 0
    assert got["enabled_inside"] is False
    assert got["enabled_after"] is True
