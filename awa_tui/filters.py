"""The filter grammar shared by the console's `/` and the CLI's `--filter` (docs/keys.md).

    owner:billing state:paused -queue:slow late nightly "two words"

Space-separated terms, all of which must hold (AND). A term is

- `field:value`: the panel's field matches the value (case-insensitive; `*` matches any
  run of characters; `name` and `kind` match a substring, every other field the whole
  value). `state` takes one of the panel's states.
- a flag (`late`, `broken`, `paused`...): a shorthand the panel defines.
- any other word: free text, a case-insensitive substring of the panel's text fields
  (for schedules: name, kind, queue or owner, as the plain `/` filter always matched).
- `-` before any of these negates it; `"..."` quotes a value or a word with spaces, a
  colon, or a leading `-` (inside quotes, `\\"` is a quote and `\\\\` a backslash).
  A quoted word is always free text, never a flag or a field.

Parsing is pure: no database, no SQL. The engine compiles a parsed `Filter` to a
parameterised WHERE clause (awa_tui/engine/filtering/sql.py); user text only ever travels
as a parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from awa_tui.engine.core.errors import ValidationError
from awa_tui.engine.core.health_words import HEALTHS
from awa_tui.engine.ledger.states import JOB_STATES
from awa_tui.instants import parse_point

TermKind = Literal["text", "field", "flag"]


class FilterError(ValidationError):
    """A filter expression the grammar refuses (one line, naming the bad part)."""


@dataclass(frozen=True)
class PanelGrammar:
    """What one panel's filter understands."""

    fields: tuple[str, ...]
    flags: tuple[str, ...] = ()
    states: tuple[str, ...] = ()  # the values `state:` accepts (empty: any value)
    substring_fields: tuple[str, ...] = ("name",)  # the rest match whole values
    # Other fields that take one of a fixed set of values, like `state` (health:missed).
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()


GRAMMARS: dict[str, PanelGrammar] = {
    "schedules": PanelGrammar(
        fields=("name", "owner", "state", "queue", "kind", "policy", "tz", "tag", "health", "result", "paused_by",
                "overlap"),
        flags=("active", "paused", "retired", "broken", "late", "unowned", "finished", "overridden", "interval"),
        states=("active", "paused", "retired", "broken", "finished"),
        substring_fields=("name", "kind"),
        choices=(("health", HEALTHS),),
    ),
    "owners": PanelGrammar(fields=("name", "state")),
    "runtimes": PanelGrammar(fields=("host", "role", "owner"), flags=("leader", "stale"),
                             substring_fields=("host",)),
    "queues": PanelGrammar(fields=("name", "state"), flags=("paused",), states=("active", "paused")),
    "audit": PanelGrammar(fields=("operator", "action", "target", "since", "until"), substring_fields=("target",)),
    "jobs": PanelGrammar(
        fields=("schedule", "queue", "state", "result", "kind"),
        flags=("failed", "manual"),
        states=JOB_STATES,
        substring_fields=("kind",),
    ),
}

# The values `result:` takes (a job's state in the last-result vocabulary; a schedule's
# last result is also `none`: no job yet).
JOB_RESULTS = ("ok", "failed", "running", "waiting", "cancelled")
# Fields whose value is a point in time: a duration ago (2h) or an ISO-8601 instant.
TIME_FIELDS = ("since", "until")

ALL_FLAGS = frozenset(flag for grammar in GRAMMARS.values() for flag in grammar.flags)

# What the schedules panel calls "late": an active schedule whose next fire has been due
# this long without being written (the evaluator runs every second, so this means stuck).
LATE_AFTER_SECONDS = 60


@dataclass(frozen=True)
class Term:
    """One condition. `name` is the field (kind field) or the flag (kind flag), "" for text."""

    kind: TermKind
    name: str
    value: str = ""
    negated: bool = False

    def __str__(self) -> str:
        sign = "-" if self.negated else ""
        if self.kind == "flag":
            return f"{sign}{self.name}"
        if self.kind == "field":
            return f"{sign}{self.name}:{_quote(self.value)}"
        # Quoted where it would otherwise read as a negation, a field or a flag.
        bare = not self.value.startswith("-") and ":" not in self.value and self.value.lower() not in ALL_FLAGS
        return f"{sign}{_quote(self.value, always=not bare)}"


@dataclass(frozen=True)
class Filter:
    """A parsed filter for one panel; empty (no terms) matches everything."""

    panel: str
    terms: tuple[Term, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.terms)

    def __str__(self) -> str:
        """The canonical text (what the console shows as the active filter)."""
        return " ".join(str(t) for t in self.terms)


def value_pattern(value: str, substring: bool) -> re.Pattern[str]:
    """A term's value as a regex for matching rows held in memory (the console's small
    lists, upstream mode's schedules): `*` is any run, the rest literal, case-insensitive;
    use `fullmatch`."""
    body = ".*".join(re.escape(part) for part in value.split("*"))
    return re.compile(f".*{body}.*" if substring else body, re.IGNORECASE | re.DOTALL)


def _quote(value: str, *, always: bool = False) -> str:
    if not always and value and not any(ch.isspace() or ch in '"\\' for ch in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class _Token:
    text: str  # the term with quotes removed
    negated: bool
    quoted_at: int  # index in `text` where quoted content starts (-1: nothing quoted)


def _tokens(source: str) -> list[_Token]:
    """Split on unquoted whitespace; a leading unquoted `-` negates (alone it is a word)."""
    tokens: list[_Token] = []
    i, n = 0, len(source)
    while i < n:
        if source[i].isspace():
            i += 1
            continue
        start, chars, quoted_at = i, [], -1
        negated = source[i] == "-" and i + 1 < n and not source[i + 1].isspace()
        if negated:
            i += 1
        while i < n and not source[i].isspace():
            if source[i] != '"':
                chars.append(source[i])
                i += 1
                continue
            if quoted_at < 0:
                quoted_at = len(chars)
            i += 1
            while True:
                if i >= n:
                    raise FilterError(f"filter: unterminated quote in {source[start:]!r}")
                if source[i] == "\\" and i + 1 < n and source[i + 1] in '"\\':
                    chars.append(source[i + 1])
                    i += 2
                elif source[i] == '"':
                    i += 1
                    break
                else:
                    chars.append(source[i])
                    i += 1
        tokens.append(_Token("".join(chars), negated, quoted_at))
    return tokens


def parse(source: str | None, panel: str = "schedules") -> Filter:
    """Parse `source` for `panel`; raises FilterError (one line) naming what is wrong."""
    grammar = GRAMMARS.get(panel)
    if grammar is None:
        raise FilterError(f"filter: unknown panel {panel!r}; panels are {', '.join(GRAMMARS)}")
    if source is None:
        return Filter(panel)
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 in argv arrive as lone surrogates
        raise FilterError(f"filter: not valid Unicode text: {source!r}") from None
    if any(not ch.isprintable() and not ch.isspace() for ch in source):
        raise FilterError(f"filter: control characters are not allowed, got {source!r}")
    terms: list[Term] = []
    for token in _tokens(source):
        text, quoted_at = token.text, token.quoted_at
        colon = text.find(":")
        # A colon inside quotes is part of a word ("a:b" is text); field names are never quoted.
        if colon > 0 and (quoted_at < 0 or colon < quoted_at):
            field, value = text[:colon].lower(), text[colon + 1:]
            terms.append(_field_term(grammar, panel, field, value, token.negated))
        elif quoted_at < 0 and text.lower() in grammar.flags:
            terms.append(Term("flag", text.lower(), "", token.negated))
        elif text == "":
            raise FilterError(f"filter: {source!r} has an empty term")
        else:
            terms.append(Term("text", "", text, token.negated))
    return Filter(panel, tuple(terms))


def _field_term(grammar: PanelGrammar, panel: str, field: str, value: str, negated: bool) -> Term:
    if field not in grammar.fields:
        raise FilterError(
            f"filter: unknown field {field!r} on {panel}; fields are {', '.join(grammar.fields)}"
        )
    if value == "":
        raise FilterError(f'filter: {field}: needs a value ({field}:VALUE, "quoted" if it has spaces)')
    if field == "state" and grammar.states:
        if value.lower() not in grammar.states:
            raise FilterError(
                f"filter: state: unknown state {value!r}; states are {', '.join(grammar.states)}"
            )
        value = value.lower()
    allowed = dict(grammar.choices).get(field)
    if allowed is not None:
        if value.lower() not in allowed:
            raise FilterError(f"filter: {field}: unknown value {value!r}; values are {', '.join(allowed)}")
        value = value.lower()
    if field == "result":
        results = JOB_RESULTS + (("none",) if panel == "schedules" else ())
        if value.lower() not in results:
            raise FilterError(f"filter: result: unknown result {value!r}; results are {', '.join(results)}")
        value = value.lower()
    if field in TIME_FIELDS:
        if negated:
            raise FilterError(f"filter: {field}: cannot be negated (use the other end of the range)")
        try:  # the format only: the instant is taken at the reader's `now`
            parse_point(value, f"filter: {field}", datetime.now(UTC))
        except ValidationError as exc:
            raise FilterError(str(exc)) from None
    return Term("field", field, value, negated)
