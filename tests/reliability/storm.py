"""One operator of the operator storm (`python -m reliability.storm DSN LABEL SECONDS SEED
OUT`): random lifecycle actions and reconciliation passes on the rel-* schedules, as fast
as it can, counting what succeeded and how many audit entries that must have written."""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections import Counter
from typing import Any

from awa_tui import Client
from awa_tui.engine.core.errors import AwaError, Conflict, NotFound

OWNERS = ("alpha", "beta")
# Who may have retired or paused a schedule during a storm: an operator of it, or the
# authoritative owner's reconciliation.
ACTOR = r"(storm-\d+|awa-reconciler)"


def refusals(action: str, name: str, owner: str) -> list[tuple[type[AwaError], str]]:
    """The refusals a concurrent storm may meet for `action` on `name` / `owner`: which error,
    and its whole message as a regular expression (the state another operator left). Every
    schedule of the storm exists, so a schedule action is never NotFound."""
    n, o = re.escape(repr(name)), re.escape(repr(owner))
    any_owner = "|".join(re.escape(repr(x)) for x in OWNERS)
    return {
        "adopt": [(Conflict, f"schedule {n} is already owned by {o}"),
                  (Conflict, f"schedule {n} is owned by ({any_owner}); use transfer to move it to {o}")],
        "transfer": [(Conflict, f"schedule {n} is unowned; use adopt to give it to {o}"),
                     (Conflict, f"schedule {n} is already owned by {o}")],
        "retire": [(Conflict, f"schedule {n} is already retired \\(by {ACTOR}\\)")],
        "restore": [(Conflict, f"schedule {n} is not retired")],
        "pause": [(Conflict, f"schedule {n} is already paused \\(by {ACTOR}\\)")],
        "resume": [(Conflict, f"schedule {n} is not paused")],
        "retire_owner": [(NotFound, f"owner {o} has no schedules"),
                         (Conflict, f"every schedule of owner {o} is already retired")],
        "restore_owner": [(NotFound, f"owner {o} has no schedules"),
                          (Conflict, f"owner {o} has no retired schedules")],
    }.get(action, [])  # reconcile is never refused


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
            ("adopt", lambda n, o: client.actions.adopt(n, o), 30),
            ("transfer", lambda n, o: client.actions.transfer(n, o), 20),
            ("retire", lambda n, o: client.actions.retire(n), 20),
            ("restore", lambda n, o: client.actions.restore(n), 20),
            ("pause", lambda n, o: client.actions.pause(n), 5),
            ("resume", lambda n, o: client.actions.resume(n), 5),
            ("retire_owner", lambda n, o: client.actions.retire_owner(o), 2),
            ("restore_owner", lambda n, o: client.actions.restore_owner(o), 2),
            ("reconcile", lambda n, o: client.runtime.reconcile(), 10),
        ]
        weights = [w for _, _, w in actions]
        while time.monotonic() < deadline:
            action, act, _ = rng.choices(actions, weights)[0]
            name, owner = rng.choice(names), rng.choice(OWNERS)
            try:
                result = act(name, owner)
            except AwaError as exc:
                # A refusal counts only as one this action may meet, exactly; anything else fails.
                if any(type(exc) is kind and re.fullmatch(message, str(exc))
                       for kind, message in refusals(action, name, owner)):
                    refused[action] += 1  # the state said no: a correct answer, nothing written
                else:
                    failures.append(f"{action} {name} {owner}: {type(exc).__name__}: {exc}")
                continue
            ok[action] += 1
            if action.endswith("_owner"):
                audit_entries += result.count + 1  # one per schedule, one for the owner
            elif action != "reconcile":
                audit_entries += 1
    with open(out, "w") as fh:
        json.dump({"ok": ok, "refused": refused, "failures": failures, "audit_entries": audit_entries}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
