"""The filter grammar (awa_tui/filters.py, docs/keys.md "Filters"): exact parse results and
one-line errors. Pure parsing: no database."""

from __future__ import annotations

import pytest

from awa_tui.filters import GRAMMARS, Filter, FilterError, Term, parse


def test_the_issue_example_parses_to_exact_terms() -> None:
    assert parse("owner:billing state:paused queue:q1 late nightly") == Filter("schedules", (
        Term("field", "owner", "billing"),
        Term("field", "state", "paused"),
        Term("field", "queue", "q1"),
        Term("flag", "late"),
        Term("text", "", "nightly"),
    ))


def test_quotes_negation_and_case() -> None:
    assert parse('Owner:"Billing EU" -tag:slow -late "two words" -"x y" STATE:Retired  Broken').terms == (
        Term("field", "owner", "Billing EU"),  # field names fold to lower case, values are kept
        Term("field", "tag", "slow", negated=True),
        Term("flag", "late", negated=True),
        Term("text", "", "two words"),
        Term("text", "", "x y", negated=True),
        Term("field", "state", "retired"),  # a state is one word of a fixed set: folded
        Term("flag", "broken"),
    )


def test_quoted_words_colons_and_escapes() -> None:
    assert parse(r'"late" "owner:x" "-a" - name:x:y "say \"hi\"" "back\\slash"').terms == (
        Term("text", "", "late"),
        Term("text", "", "owner:x"),
        Term("text", "", "-a"),
        Term("text", "", "-"),
        Term("field", "name", "x:y"),
        Term("text", "", 'say "hi"'),
        Term("text", "", "back\\slash"),
    )


def test_empty_and_blank_filters_have_no_terms() -> None:
    assert parse(None) == Filter("schedules")
    assert parse("   \t ") == Filter("schedules")
    assert not parse("")


def test_the_canonical_text_parses_back_to_the_same_filter() -> None:
    source = r'owner:"a b" -late "late" "-x" "k:v" name:"q\"x" -tag:"t\\u" plain'
    parsed = parse(source)
    assert parsed.terms[5:7] == (Term("field", "name", 'q"x'), Term("field", "tag", "t\\u", negated=True))
    assert str(parsed) == source
    assert parse(str(parsed)) == parsed


def test_each_panel_has_its_own_fields() -> None:
    assert parse("host:web-1 role:leader -stale", "runtimes").terms == (
        Term("field", "host", "web-1"), Term("field", "role", "leader"), Term("flag", "stale", negated=True))
    assert parse("operator:alice action:pause target:nightly", "audit").terms == (
        Term("field", "operator", "alice"), Term("field", "action", "pause"), Term("field", "target", "nightly"))
    assert parse("name:q1 state:Paused paused", "queues").terms == (
        Term("field", "name", "q1"), Term("field", "state", "paused"), Term("flag", "paused"))
    assert parse("name:billing state:blocked", "owners").terms == (
        Term("field", "name", "billing"), Term("field", "state", "blocked"))
    # `late` is a schedules flag only: elsewhere it is a word.
    assert parse("late", "queues").terms == (Term("text", "", "late"),)
    assert {panel: g.fields for panel, g in GRAMMARS.items()} == {
        "schedules": ("name", "owner", "state", "queue", "kind", "policy", "tz", "tag", "health", "result",
                      "paused_by", "overlap"),
        "owners": ("name", "state"),
        "runtimes": ("host", "role", "owner"),
        "queues": ("name", "state"),
        "audit": ("operator", "action", "target", "since", "until"),
        "jobs": ("schedule", "queue", "state", "result", "kind"),
    }


@pytest.mark.parametrize(("source", "panel", "message"), [
    ("colour:red", "schedules",
     "filter: unknown field 'colour' on schedules; fields are name, owner, state, queue, kind, policy, tz, tag, "
     "health, result, paused_by, overlap"),
    ("owner:x -HOST:y", "audit",
     "filter: unknown field 'owner' on audit; fields are operator, action, target, since, until"),
    ("-host:a", "queues", "filter: unknown field 'host' on queues; fields are name, state"),
    ("state:sleepy", "schedules", "filter: state: unknown state 'sleepy'; states are active, paused, retired, broken, "
     "finished"),
    ("state:retired", "queues", "filter: state: unknown state 'retired'; states are active, paused"),
    ("owner:", "schedules", 'filter: owner: needs a value (owner:VALUE, "quoted" if it has spaces)'),
    ('nightly "billing', "schedules", "filter: unterminated quote in '\"billing'"),
    ('a ""', "schedules", "filter: 'a \"\"' has an empty term"),
    ("x\x1b[2J", "schedules", "filter: control characters are not allowed, got 'x\\x1b[2J'"),
    ("a \udcff", "schedules", "filter: not valid Unicode text: 'a \\udcff'"),
    ("x", "plan", "filter: unknown panel 'plan'; panels are schedules, owners, runtimes, queues, audit, jobs"),
])
def test_bad_input_is_one_line_naming_it(source: str, panel: str, message: str) -> None:
    with pytest.raises(FilterError) as caught:
        parse(source, panel)
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)

