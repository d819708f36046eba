"""S60: our cron arithmetic against an independent implementation, npm croner.

Upstream Awa evaluates cron with the Rust crate croner 2.2; npm croner (pinned in
croner_js/package.json, installed by `make test`) is the same author's JavaScript
implementation of the same pattern language, written and tested separately. Seeded random
expressions of every form both document alike (numbers, names, ranges with a `SUN` end,
steps, lists, `?`, seconds, `L`, `nW`, `#n`, `#L`, `nL`, the OR of the day fields, and
values or ranges both refuse) run in six DST-heavy zones from random instants between 1970
and 2100; both sides must accept and refuse alike and give the same instants.

Where npm croner and upstream's Rust croner differ by their own documentation, the random
cases leave them out and the instants are written by hand below: `nW` across a month
edge (Rust looks at the neighbour day in whatever month it is; npm croner stays inside
the month), a wall time in a DST gap (Rust: the first valid instant after it, the end of
the gap; npm croner: the wall time one offset later) and a fold (first occurrence; the
random sweep tolerates a first difference only on a fire our side marks gap or fold).
One more, npm croner's own slip, is tolerated the same way and written by hand: with
both day fields restricted, its day search leaving February past day 28 skips 1 and 2
March (`0 0 2 * 2` after 27 Feb 2026 gives 3 March; Rust croner tests each day).
Numeric-prefix steps (`10/5`), which npm croner refuses and Rust accepts, are checked
by hand in test_cron_parity.py.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from engine_helpers import at

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.cron.expression import upcoming_fires

ORACLE = Path(__file__).parent / "croner_js"
PINNED = json.loads((ORACLE / "package.json").read_text())["dependencies"]["croner"]
ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "America/Santiago",
         "America/Havana")
SEED = 60
CASES = 4000
FIRES = 10
FIRST = datetime(1970, 1, 1, tzinfo=UTC)
SPAN_SECONDS = int((datetime(2100, 1, 1, tzinfo=UTC) - FIRST).total_seconds())
MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
DAYS = "sun mon tue wed thu fri sat".split()
BOUNDS = {"sec": (0, 59), "min": (0, 59), "hour": (0, 23), "dom": (1, 31), "month": (1, 12), "dow": (0, 7)}


def run_oracle(cases: list[dict[str, object]]) -> list[dict[str, object]]:
    """npm croner's answers; fails (never skips) naming what is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the cron differential test runs npm croner (Debian: apt-get install -y "
                    "nodejs npm; `make test` installs it as root)")
    installed = ORACLE / "node_modules" / "croner" / "package.json"
    if not installed.exists():
        pytest.fail(f"npm croner is not installed in {ORACLE}: run `make croner-js` (a prerequisite of `make test`)")
    version = json.loads(installed.read_text())["version"]
    if version != PINNED:
        pytest.fail(f"npm croner {version} is installed, {PINNED} is pinned: run `make croner-js`")
    done = subprocess.run([node, str(ORACLE / "oracle.mjs")], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=600, cwd=ORACLE, check=False)
    if done.returncode != 0:
        pytest.fail(f"the npm croner oracle failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


# -- random expressions ------------------------------------------------------------------


def _number(rng: random.Random, field: str, low: int | None = None) -> int:
    lo, hi = BOUNDS[field]
    return rng.randint(lo if low is None else low, hi)


def _spell(rng: random.Random, field: str, n: int, closing: bool = False) -> str:
    if field == "month" and rng.random() < 0.3:
        name = MONTHS[n - 1]
        return name.upper() if rng.random() < 0.3 else name
    if field == "dow" and rng.random() < 0.3 and (n < 7 or closing):
        return DAYS[n % 7]  # a range's closing SUN is 7 in both
    return str(n)


def _plain(rng: random.Random, field: str) -> str:
    hi = BOUNDS[field][1]
    kind = rng.choice(["value", "value", "range", "range_step", "star_step"])
    if kind == "star_step":
        return f"*/{rng.randint(1, hi)}"
    first = _number(rng, field)
    if kind == "value":
        return _spell(rng, field, first)
    last = _number(rng, field, low=first)  # forward, sometimes equal (`5-5`)
    text = f"{_spell(rng, field, first)}-{_spell(rng, field, last, closing=True)}"
    return text if kind == "range" else f"{text}/{rng.randint(1, hi)}"


def _dom_form(rng: random.Random) -> str:
    # nW only for days 2-27, whose nearest weekday never leaves the month (see the docstring).
    return rng.choice(["L", f"{rng.randint(2, 27)}W"])


def _dow_form(rng: random.Random) -> str:
    kind = rng.choice(["nth", "last", "bare_last", "range_nth", "star_nth"])
    day = _spell(rng, "dow", rng.randint(0, 7), closing=True)
    occurrence = str(rng.randint(1, 5))
    if kind == "nth":
        return f"{day}#{occurrence}"
    if kind == "last":
        return f"{day}#L"
    if kind == "bare_last":
        return f"{rng.randint(0, 7)}L"
    if kind == "star_nth":
        return f"*/{rng.randint(1, 4)}#{occurrence}"
    first = rng.randint(0, 7)
    return f"{_spell(rng, 'dow', first)}-{_spell(rng, 'dow', rng.randint(first, 7), closing=True)}#{occurrence}"


def _invalid(rng: random.Random, field: str) -> str:
    lo, hi = BOUNDS[field]
    return rng.choice([str(hi + 1), f"{hi}-{lo}" if hi > lo + 1 else str(hi + 1), "*/0", f"{lo}-{hi + 2}"])


def _field(rng: random.Random, field: str) -> str:
    roll = rng.random()
    if roll < 0.3:
        return "?" if field in ("dom", "dow") and rng.random() < 0.3 else "*"
    if roll < 0.32:
        return _invalid(rng, field)
    items = [_plain(rng, field) for _ in range(rng.choice([1, 1, 2, 3]))]
    if field == "dom" and rng.random() < 0.25:
        items[rng.randrange(len(items))] = _dom_form(rng)
    if field == "dow" and rng.random() < 0.3:
        items[rng.randrange(len(items))] = _dow_form(rng)
    return ",".join(items)


def random_expression(rng: random.Random) -> str:
    # Seconds and minutes mostly narrow, so that ten fires span days and months.
    fields = []
    if rng.random() < 0.2:
        fields.append(str(rng.randint(0, 59)) if rng.random() < 0.7 else _field(rng, "sec"))
    fields.append(str(rng.randint(0, 59)) if rng.random() < 0.6 else _field(rng, "min"))
    fields.append(str(rng.randint(0, 23)) if rng.random() < 0.4 else _field(rng, "hour"))
    fields += [_field(rng, "dom"), _field(rng, "month"), _field(rng, "dow")]
    return " ".join(fields)


@dataclass(frozen=True)
class Case:
    expr: str
    zone: str
    start: datetime

    def as_json(self) -> dict[str, object]:
        # Upstream reads `?` as `*` before anything else; npm croner 10 documents the same
        # but counts a `?` day field as restricted (both day fields then OR), so it is sent `*`.
        expr = self.expr.replace("?", "*")
        return {"expr": expr, "zone": self.zone, "start": self.start.isoformat(), "count": FIRES}


def random_cases(seed: int, count: int) -> list[Case]:
    rng = random.Random(seed)
    return [Case(random_expression(rng), rng.choice(ZONES), FIRST + timedelta(seconds=rng.randrange(SPAN_SECONDS)))
            for _ in range(count)]


# -- comparing -----------------------------------------------------------------------------


def ours(case: Case) -> tuple[list[datetime], list[str | None]] | str:
    """Our fires and their DST marks, or the refusal."""
    try:
        fires = upcoming_fires(case.expr, case.zone, case.start, FIRES)
    except ValidationError as exc:
        return str(exc)
    return [f.at for f in fires], [f.mark for f in fires]


def mismatch(case: Case, mine: tuple[list[datetime], list[str | None]] | str,
             theirs: dict[str, object]) -> str | None:
    """None when both agree or the difference is explained; else what differs."""
    if isinstance(mine, str):
        if "never fires" in mine and theirs.get("fires") == []:
            return None  # refused at registration here, accepted and silent there (S60)
        return None if "error" in theirs else f"ours refuses ({mine}), croner fires {theirs['fires']}"
    if "error" in theirs:
        return f"ours fires {[f.isoformat() for f in mine[0][:3]]}..., croner refuses: {theirs['error']}"
    instants, marks = mine
    zone = ZoneInfo(case.zone)
    expected = [datetime.fromisoformat(str(s).replace("Z", "+00:00")) for s in theirs["fires"]]  # type: ignore[union-attr]
    for i, (a, b) in enumerate(zip(instants, expected, strict=False)):
        if a != b:
            if marks[i] is not None or (i > 0 and marks[i - 1] is not None):
                return None  # a DST gap or fold: upstream's rule, checked by hand below
            before = (case.start if i == 0 else instants[i - 1]).astimezone(zone)
            mine_local = a.astimezone(zone)
            if a < b and before.month == 2 and (mine_local.month, mine_local.day) in ((3, 1), (3, 2)):
                return None  # npm croner leaving February past day 28 skips 1-2 March (by hand below)
            return f"fire {i + 1}: ours {a.isoformat()}, croner {b.isoformat()}"
    if len(instants) != len(expected):
        return f"ours {len(instants)} fires, croner {len(expected)}"
    return None


def _simpler(expr: str) -> list[str]:
    """Candidate expressions one step simpler: a field set to `*` or a list item dropped."""
    fields = expr.split(" ")
    out = []
    for i, text in enumerate(fields):
        if text != "*":
            out.append(" ".join([*fields[:i], "*", *fields[i + 1:]]))
        items = text.split(",")
        for j in range(len(items)) if len(items) > 1 else ():
            out.append(" ".join([*fields[:i], ",".join(items[:j] + items[j + 1:]), *fields[i + 1:]]))
    return out


def minimal(case: Case) -> Case:
    """The simplest expression (same zone and start) that still mismatches."""
    while True:
        candidates = [Case(e, case.zone, case.start) for e in _simpler(case.expr)]
        answers = run_oracle([c.as_json() for c in candidates]) if candidates else []
        smaller = next((c for c, a in zip(candidates, answers, strict=True) if mismatch(c, ours(c), a)), None)
        if smaller is None:
            return case
        case = smaller


def report(case: Case, theirs: dict[str, object]) -> str:
    mine = ours(case)
    shown = mine if isinstance(mine, str) else [f.isoformat() for f in mine[0]]
    return (f"expression {case.expr!r} in {case.zone} after {case.start.isoformat()}: "
            f"{mismatch(case, mine, theirs)}\n  ours:   {shown}\n  croner: {theirs.get('fires', theirs.get('error'))}")


def test_random_expressions_fire_on_the_same_instants_as_npm_croner() -> None:
    cases = random_cases(SEED, CASES)
    answers = run_oracle([c.as_json() for c in cases])
    wrong = [(c, a) for c, a in zip(cases, answers, strict=True) if mismatch(c, ours(c), a)]
    accepted = sum("fires" in a for a in answers)
    # The sweep means something only if most cases are accepted and fire.
    assert accepted > CASES * 0.8, accepted
    if wrong:
        first, _ = wrong[0]
        small = minimal(first)
        (answer,) = run_oracle([small.as_json()])
        pytest.fail(f"{len(wrong)} of {CASES} cases differ; the first, made minimal:\n{report(small, answer)}")


def test_a_planted_difference_is_found_and_made_minimal() -> None:
    # Negative control: the comparison must see the old croniter reading of `5-5` (every
    # day: Berlin midnight is 23:00Z), where croner gives Monday 5 January first; and the
    # shrinking step must offer each field as `*` and each list without one item.
    case = Case("0 0 5-5 * 1,3", "Europe/Berlin", at("2026-01-01T00:00:00"))
    (theirs,) = run_oracle([case.as_json()])
    daily = [at("2026-01-01T23:00:00") + timedelta(days=d) for d in range(FIRES)]
    assert mismatch(case, (daily, [None] * FIRES), theirs) == \
        "fire 1: ours 2026-01-01T23:00:00+00:00, croner 2026-01-04T23:00:00+00:00"
    # ... and on the real arithmetic there is none.
    assert mismatch(case, ours(case), theirs) is None
    assert _simpler("0 0 5-5 * 1,3") == ["* 0 5-5 * 1,3", "0 * 5-5 * 1,3", "0 0 * * 1,3", "0 0 5-5 * *",
                                          "0 0 5-5 * 3", "0 0 5-5 * 1"]


def test_the_random_expressions_cover_every_form() -> None:
    text = " ".join(c.expr for c in random_cases(SEED, CASES))
    for form in ("L ", "W ", "#L", "#5", "L,", "-sun", "-7", "?", "*/", "JAN", "mon", "5-5"):
        assert form.lower() in text.lower(), form
    assert {c.zone for c in random_cases(SEED, CASES)} == set(ZONES)


# -- where npm croner and upstream's Rust croner differ: instants written by hand ----------


@pytest.mark.parametrize(
    ("expr", "zone", "after", "expected"),
    [
        # nW across a month edge. Sat 1 Aug 2026: 1W is Friday 31 July (npm croner: Mon 3 Aug);
        # Tue 1 Sep 2026 is itself a weekday.
        ("0 12 1W * *", "UTC", "2026-07-15T00:00:00", ["2026-07-31T12:00:00Z", "2026-09-01T12:00:00Z"]),
        # Sun 31 May 2026: 31W is Monday 1 June (npm croner: Fri 29 May); June has no 31st.
        ("0 12 31W * *", "UTC", "2026-05-15T00:00:00", ["2026-06-01T12:00:00Z", "2026-07-31T12:00:00Z"]),
        # 28W in February only: Sun 28 Feb 2027 moves to Monday 1 March, which the month field
        # does not allow, so no fire in 2027; Mon 28 Feb 2028 is a weekday.
        ("0 12 28W 2 *", "UTC", "2026-03-01T00:00:00", ["2028-02-28T12:00:00Z"]),
        # Leaving February with both day fields restricted: Monday 2 March 2026 is the 2nd
        # (npm croner skips it and gives Tuesday 3 March first).
        ("0 0 2 * 2", "UTC", "2026-02-27T00:00:00", ["2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z"]),
        ("0 0 1,3 * 2", "UTC", "2026-02-27T00:00:00", ["2026-03-01T00:00:00Z", "2026-03-03T00:00:00Z"]),
        # A DST gap: the first valid instant after the wall time. Lord Howe springs from 02:00
        # (+10:30) to 02:30 (+11:00) on Sun 4 Oct 2026: 02:15 fires at 02:30 +11:00 = 15:30Z
        # the day before (npm croner: 02:45 +11:00).
        ("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00",
         ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]),
        # Chatham springs from 02:45 (+12:45) to 03:45 (+13:45) on Sun 27 Sep 2026: 03:00 fires
        # at 03:45 +13:45 = 14:00Z on the 26th; the day before, 03:00 +12:45 = 14:15Z.
        ("0 3 * * *", "Pacific/Chatham", "2026-09-25T00:00:00",
         ["2026-09-25T14:15:00Z", "2026-09-26T14:00:00Z", "2026-09-27T13:15:00Z"]),
        # New York springs from 02:00 to 03:00 on Sun 8 Mar 2026: 02:30 fires at 03:00 EDT = 07:00Z.
        ("30 2 * * *", "America/New_York", "2026-03-07T00:00:00",
         ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
        # A fold fires once, at the first occurrence. Lord Howe falls back from 02:00 (+11:00) to
        # 01:30 (+10:30) on Sun 5 Apr 2026: 01:45 fires at 01:45 +11:00 = 14:45Z on the 4th.
        ("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00",
         ["2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"]),
        # Chatham falls back from 03:45 (+13:45) to 02:45 (+12:45) on Sun 5 Apr 2026: 03:00 fires
        # at 03:00 +13:45 = 13:15Z on the 4th, then 03:00 +12:45 = 14:15Z on the 5th.
        ("0 3 * * *", "Pacific/Chatham", "2026-04-04T00:00:00", ["2026-04-04T13:15:00Z", "2026-04-05T14:15:00Z"]),
    ],
)
def test_where_npm_croner_differs_upstreams_instants_by_hand(expr: str, zone: str, after: str,
                                                             expected: list[str]) -> None:
    fires = upcoming_fires(expr, zone, at(after), len(expected))
    assert [f.at.strftime("%Y-%m-%dT%H:%M:%SZ") for f in fires] == expected
