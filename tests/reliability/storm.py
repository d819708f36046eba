"""One operator of the operator storm (`python -m reliability.storm DSN LABEL SECONDS SEED
OUT`): random lifecycle actions and reconciliation passes on the rel-* schedules, as fast
as it can, counting what succeeded and how many audit entries that must have written."""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter
from typing import Any

from awa_tui import Client
from awa_tui.engine.errors import AwaError, Conflict, NotFound

OWNERS = ("alpha", "beta")


def main(dsn: str, label: str, seconds: str, seed: str, out: str, names_csv: str) -> None:
    rng = random.Random(int(seed))
    names = names_csv.split(",")
    ok: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    failures: list[str] = []
    audit_entries = 0
    deadline = time.monotonic() + float(seconds)
    with Client(dsn, operator=label, application_name=f"rel-storm {label}") as client:
        actions: list[tuple[str, Any, int]] = [
            ("adopt", lambda: client.adopt(rng.choice(names), rng.choice(OWNERS)), 30),
            ("transfer", lambda: client.transfer(rng.choice(names), rng.choice(OWNERS)), 20),
            ("retire", lambda: client.retire(rng.choice(names)), 20),
            ("restore", lambda: client.restore(rng.choice(names)), 20),
            ("pause", lambda: client.pause(rng.choice(names)), 5),
            ("resume", lambda: client.resume(rng.choice(names)), 5),
            ("retire_owner", lambda: client.retire_owner(rng.choice(OWNERS)), 2),
            ("restore_owner", lambda: client.restore_owner(rng.choice(OWNERS)), 2),
            ("reconcile", lambda: client.reconcile(), 10),
        ]
        weights = [w for _, _, w in actions]
        while time.monotonic() < deadline:
            name, act, _ = rng.choices(actions, weights)[0]
            try:
                result = act()
            except (Conflict, NotFound):
                refused[name] += 1  # the state said no: a correct answer, nothing written
                continue
            except AwaError as exc:
                failures.append(f"{name}: {exc}")
                continue
            ok[name] += 1
            if name.endswith("_owner"):
                audit_entries += result.count + 1  # one per schedule, one for the owner
            elif name != "reconcile":
                audit_entries += 1
    with open(out, "w") as fh:
        json.dump({"ok": ok, "refused": refused, "failures": failures, "audit_entries": audit_entries}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
