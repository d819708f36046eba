"""What an operator reads is in operator words: no rule id (S16) anywhere a user sees text
(every command's help, errors and log lines, the console's help screen and key map), and
no raw column name (`state_text`, `last_enqueued_at`) above a CLI table's column or beside
a value in a listing. `--json` keeps its field names (tests/cli/test_cli_json_keys.py).

The scanners are checked on samples they must flag first (negative controls), so a scan
that finds nothing proves something."""

from __future__ import annotations

import ast
import asyncio
import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

import psycopg
import typer
from cli_helpers import awa, awa_many, table
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from awa_tui import Client, cli
from awa_tui.cli.headings import LABEL_WIDTH
from awa_tui.tui.keymap import ACTS
from awa_tui.tui.screens.help import HelpScreen

ROOT = Path(__file__).resolve().parents[2]
RULE_ID = re.compile(r"\bS\d{1,2}\b")
# A header is words in capitals (digits, spaces and a little punctuation allowed): a field
# name such as `state_text` or `paused_by` is lower case, and most have an underscore.
HEADER = re.compile(r"[A-Z0-9][A-Z0-9 ()?#/.-]*")
# A literal holding SQL: its `--` comments are for whoever reads the source, not shown.
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|WITH)\b")
SQL_COMMENT = re.compile(r"--[^\n]*")


def rule_ids(text: str) -> list[str]:
    return RULE_ID.findall(text)


def raw_headers(headers: list[str]) -> list[str]:
    return [h for h in headers if not HEADER.fullmatch(h)]


def user_strings(source: str) -> list[str]:
    """The string literals of a module, in source order, that can reach a user: every one
    (the fixed parts of f-strings too) but docstrings, which are not shown (a command's
    docstring is its help: scanned as rendered help), with SQL comments left out."""
    tree = ast.parse(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    texts: dict[int, tuple[tuple[int, int], str]] = {}
    parts: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # an f-string is one text: its SQL is seen whole
            pieces = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
            parts.update(id(v) for v in node.values)
            texts[id(node)] = ((node.lineno, node.col_offset), "".join(str(p) for p in pieces))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts[id(node)] = ((node.lineno, node.col_offset), node.value)
    found = [text for key, (_, text) in sorted(texts.items(), key=lambda item: item[1][0]) if key not in parts]
    return [SQL_COMMENT.sub("", text) if SQL.search(text) else text for text in found]


def sql_messages(text: str) -> list[str]:
    """The messages of RAISE statements (what a trigger tells whoever wrote the row)."""
    return re.findall(r"RAISE\s+(?:EXCEPTION|WARNING|NOTICE)\s+'((?:[^']|'')*)'", text)


def help_screen_text() -> str:
    """The console's `?` screen as a Textual pilot shows it, every key allowed."""

    async def render() -> str:
        app = App()
        async with app.run_test(size=(200, 80)) as pilot:
            await app.push_screen(HelpScreen(lambda _act: True, read_only=True, features_note="some keys are gone"))
            await pilot.pause()
            console = Console(width=200, record=True, color_system=None)
            for static in app.screen.query(Static):
                console.print(static.content)
            return console.export_text()

    return asyncio.run(render())


def command_paths() -> list[list[str]]:
    """Every command and group of `awa-tui`, from the tree Typer builds of every module."""
    for module in pkgutil.iter_modules(cli.__path__):
        importlib.import_module(f"awa_tui.cli.{module.name}")
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(cli.app), [])
    return paths


def test_the_scanners_flag_what_they_look_for() -> None:
    """Negative controls: each scanner finds a planted rule id or raw column name."""
    assert rule_ids("Pause automatic fires (S16); several names pause in bulk.") == ["S16"]
    assert rule_ids("Owners (S22-S31), 5S, PS1, " + "S" + "100") == ["S22", "S31"]  # three digits: not a rule
    assert raw_headers(["NAME", "state_text", "paused_by", "LAST FIRE", "owner"]) == [
        "state_text", "paused_by", "owner"]
    planted = (
        '"""Module docstring (S1) is not shown."""\n'
        'def f(x):\n'
        '    """Nor is this one (S2)."""\n'
        '    log.warning("pass failed (S9): %s", x)\n'
        '    if x:\n'
        '        raise ValidationError(f"bad cron {x} (S2)")\n'
        '    fail("refused (S38)")\n'
        '    conn.execute("SELECT 1 -- a comment (S11)\\nFROM t")\n'
        '    return {"why": "the leader was gone (S39)"}\n'
    )
    assert [i for s in user_strings(planted) for i in rule_ids(s)] == ["S9", "S2", "S38", "S39"]
    assert sql_messages("RAISE EXCEPTION 'schedule %: paused (S16)', NEW.name;") == ["schedule %: paused (S16)"]


def test_no_command_help_names_a_rule() -> None:
    paths = command_paths()
    assert len(paths) == 68  # alerts, runtime events, cron create, edit, delete, import pg-cron, forward among them
    assert ["cron", "pause"] in paths and ["calendar", "set"] in paths and ["jobs", "prune"] in paths
    outs = awa_many([[*path, "--help"] for path in paths])
    assert [(" ".join(p), o.returncode) for p, o in zip(paths, outs, strict=True) if o.returncode] == []
    assert all("Usage:" in o.stdout for o in outs)
    found = {" ".join(p) or "awa-tui": rule_ids(o.stdout) for p, o in zip(paths, outs, strict=True)}
    assert {k: v for k, v in found.items() if v} == {}


def test_no_message_a_user_can_read_names_a_rule() -> None:
    """Errors, log lines, notifications, titles, dialogs, verdicts and reasons: every
    literal of the package but docstrings and SQL comments; the triggers' messages in the
    migrations."""
    offenders, scanned = [], []
    for path in sorted((ROOT / "awa_tui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        scanned += user_strings(path.read_text())
        offenders += [f"{rel}: {s[:80]!r}" for s in user_strings(path.read_text()) if rule_ids(s)]
    # The scan reads the messages themselves (one from the CLI, one the engine raises).
    assert any(s.startswith("no database configured: pass --dsn") for s in scanned)
    assert any("newer than this awa-tui" in s for s in scanned) and len(scanned) > 2000
    for path in sorted((ROOT / "awa_tui" / "engine" / "migrations").rglob("*.sql")):
        offenders += [f"{path.name}: {m!r}" for m in sql_messages(path.read_text()) if rule_ids(m)]
    assert offenders == []


def test_the_console_help_screen_and_key_map_name_no_rule() -> None:
    shown = help_screen_text()
    assert "or resume the selected schedule" in shown and "esc, ? or q closes this help" in shown
    assert rule_ids(shown) == []
    assert [a.key for a in ACTS if rule_ids(f"{a.label} {a.help} {a.palette or ''}")] == []


def _seed(client: Client, conn: psycopg.Connection[Any]) -> None:
    client.periodic("nightly", "30 2 * * *", "billing.run", {"p": 1}, timezone="America/New_York", queue="billing")
    client.periodic("early", "30 1 * * *", "report.run")
    client.sync()
    client.runtime.snapshot()
    client.actions.trigger("nightly", operator="ann@ops")
    client.actions.adopt("early", "billing", operator="ann@ops")
    client.actions.pause("early", operator="bo@ops")


def test_every_cli_table_is_headed_in_operator_words(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    _seed(client, conn)
    commands = [["cron", "list"], ["queue", "list"], ["runtime", "list"], ["audit"], ["owner", "list"],
                ["jobs", "list"], ["cron", "history", "nightly"], ["db", "status"], ["cron", "show", "nightly"]]
    outs = awa_many([[*argv, "--dsn", dsn] for argv in commands])
    headers = {}
    for argv, out in zip(commands, outs, strict=True):
        assert (out.returncode, out.stderr) == (0, ""), argv
        lines = out.stdout.splitlines()
        rule = next(i for i, line in enumerate(lines) if i and line and set(line) <= {"-", " "})
        headers[" ".join(argv)] = re.split(r"\s{2,}", lines[rule - 1].strip())
    assert {k: raw_headers(v) for k, v in headers.items() if raw_headers(v)} == {}
    assert headers["cron list"] == ["NAME", "CRON", "ZONE", "KIND", "QUEUE", "POLICY", "STATE", "LAST FIRE",
                                    "NEXT FIRE", "OVERDUE", "OWNER", "ORIGIN"]
    assert headers["cron show nightly"] == ["ID", "STATE", "FIRE TIME", "CREATED", "MANUAL"]
    assert headers["jobs list"] == ["ID", "SCHEDULE", "QUEUE", "STATE", "RESULT", "TRY", "FIRE TIME", "CREATED",
                                    "DURATION (S)", "LAST ERROR"]
    listed = {row["NAME"]: row for row in table(outs[0].stdout)}
    assert (listed["early"]["STATE"].split(" since ")[0], listed["early"]["POLICY"], listed["nightly"]["ZONE"]) == (
        "PAUSED by bo@ops", "coalesce", "America/New_York")


def test_a_one_row_listing_labels_values_in_words(dsn: str, client: Client, conn: psycopg.Connection[Any]) -> None:
    _seed(client, conn)
    job = awa("jobs", "list", "--json", "--dsn", dsn)
    job_id = re.search(r'"id": (\d+)', job.stdout).group(1)  # type: ignore[union-attr]
    for argv in (["cron", "show", "nightly"], ["jobs", "show", job_id]):
        out = awa(*argv, "--dsn", dsn)
        assert (out.returncode, out.stderr) == (0, ""), argv
        labels = [line[:LABEL_WIDTH].rstrip() for line in out.stdout.splitlines()
                  if len(line) > LABEL_WIDTH and line[LABEL_WIDTH] == " " and not line.startswith(" ")]
        assert len(labels) >= 10, argv
        assert [label for label in labels if "_" in label] == [], argv
    shown = awa("cron", "show", "nightly", "--dsn", dsn).stdout.splitlines()
    assert f"{'last fire':{LABEL_WIDTH}} -" in shown and f"{'zone':{LABEL_WIDTH}} America/New_York" in shown
