"""Issue 18: a command imports and builds only what it needs (cli/lazy.py), and the lazy
tree is the one Typer builds from every module; `cron list` stops at its first page."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from cli_helpers import awa, awa_json

from awa_tui import Client

HEAVY = ("psycopg", "textual", "pydantic", "rich", "awa_tui.engine.client", "awa_tui.engine.read.views")


def _loaded_after(code: str, modules: tuple[str, ...] = HEAVY) -> dict[str, bool]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps({{m: m in sys.modules for m in {modules!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_importing_the_cli_loads_no_engine_no_rich_no_console() -> None:
    assert _loaded_after("import awa_tui.cli") == dict.fromkeys(HEAVY, False)


def test_help_loads_no_database_driver_and_no_engine() -> None:
    code = ("import contextlib, io\nfrom awa_tui.cli import main\nsys.argv = ['awa-tui', '--help']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n        main()\n"
            "    except SystemExit:\n        pass")
    # The help is drawn by Rich; nothing else heavy is imported.
    assert _loaded_after(code) == {**dict.fromkeys(HEAVY, False), "rich": True}


# What a command reading one schedule never needs: the runtime, the evaluator, the ledger,
# the filter grammar, upstream mode, Rich (its output is plain text).
NOT_FOR_ONE_SCHEDULE = (
    "rich", "awa_tui.engine.firing.evaluator", "awa_tui.engine.runtime.loops", "awa_tui.engine.runtime.duties",
    "awa_tui.engine.runtime.reporter", "awa_tui.engine.sync.writer", "awa_tui.engine.actions.backfill",
    "awa_tui.engine.actions.ops",
    "awa_tui.engine.ledger.models", "awa_tui.engine.health.models", "awa_tui.engine.ownership.plans",
    "awa_tui.engine.read.results", "awa_tui.filters", "awa_tui.cli.upstream", "awa_tui.engine.upstream.models",
    "awa_tui.engine.upstream.adapter",
)


def _run_loaded(argv: list[str], modules: tuple[str, ...]) -> tuple[int, dict[str, bool]]:
    """Run `awa-tui argv` in a fresh interpreter: its exit code, and which of `modules` it imported."""
    code = (f"import contextlib, io, sys\nfrom awa_tui.cli import main\nsys.argv = ['awa-tui', *{argv!r}]\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n        main()\n"
            "    except SystemExit as exc:\n        code = exc.code\n"
            f"print(code, __import__('json').dumps({{m: m in sys.modules for m in {modules!r}}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    exit_code, loaded = out.stdout.splitlines()[-1].split(" ", 1)
    return int(exit_code), json.loads(loaded)


def test_cron_show_imports_only_what_it_reads(dsn: str, client: Client) -> None:
    client.periodic("a1", "0 3 * * *", "test.job")
    client.sync()
    assert _run_loaded(["cron", "show", "a1", "--dsn", dsn], NOT_FOR_ONE_SCHEDULE) == (
        0, dict.fromkeys(NOT_FOR_ONE_SCHEDULE, False))


def test_importing_the_client_loads_no_read_model_and_no_view() -> None:
    light = ("awa_tui.engine.read.models", "awa_tui.engine.read.views", "awa_tui.engine.schedules.definition",
             *NOT_FOR_ONE_SCHEDULE)
    assert _loaded_after("import awa_tui.engine.client", light) == dict.fromkeys(light, False)


def _eager_and_lazy() -> tuple[Any, Any]:
    import importlib
    import pkgutil

    import typer.main
    from typer.models import TyperInfo

    import awa_tui.cli as cli
    from awa_tui.cli.lazy import build_lazy

    for module in pkgutil.iter_modules(cli.__path__):
        importlib.import_module(f"awa_tui.cli.{module.name}")
    lazy = build_lazy(TyperInfo(cli.app), cli.load_commands, lambda _cmd, _path: None)
    lazy.lazy_order = tuple(cli.COMMAND_MODULES)
    return typer.main.get_command(cli.app), lazy


def test_the_table_of_commands_is_the_tree_typer_builds() -> None:
    eager, lazy = _eager_and_lazy()
    from awa_tui.cli import COMMAND_MODULES

    # Typer's own tree lists groups in the order their modules were first imported (which
    # other tests in the same process decide); the lazy tree keeps the table's order.
    assert list(COMMAND_MODULES) == lazy.list_commands(None)
    assert sorted(COMMAND_MODULES) == sorted(eager.commands)


def test_every_lazily_built_command_has_the_eager_ones_parameters() -> None:
    def shape(cmd: Any) -> list[tuple[Any, ...]]:
        return [(p.name, tuple(p.opts), p.required, repr(p.default), getattr(p, "help", None)) for p in cmd.params]

    def walk(eager: Any, lazy: Any, path: str, seen: list[str]) -> None:
        assert (path, shape(lazy), lazy.help) == (path, shape(eager), eager.help)
        for name, sub in getattr(eager, "commands", {}).items():
            walk(sub, lazy.get_command(None, name), f"{path} {name}", seen)
        seen.append(path)

    seen: list[str] = []
    eager, lazy = _eager_and_lazy()
    walk(eager, lazy, "awa-tui", seen)
    # calendar: 4 + group; alerts: 4 + sinks (3 + group) + group; cron create, edit, delete: 3; import: 1 + group;
    # forward: 1 + group
    assert "awa-tui cron show" in seen and "awa-tui jobs prune" in seen and len(seen) == 68


def test_cron_list_stops_at_its_limit_and_says_so(dsn: str, client: Client) -> None:
    for name in ("a1", "a2", "a3"):
        client.periodic(name, "0 3 * * *", "test.job")
    client.sync()
    assert [r["name"] for r in awa_json("cron", "list", "--dsn", dsn)] == ["a1", "a2", "a3"]  # --json: every row
    cut = awa_json("cron", "list", "--dsn", dsn, "--limit", "2")
    assert ([r["name"] for r in cut["schedules"]], cut["limit"], cut["truncated"]) == (["a1", "a2"], 2, True)
    whole = awa_json("cron", "list", "--dsn", dsn, "--limit", "3")
    assert ([r["name"] for r in whole["schedules"]], whole["truncated"]) == (["a1", "a2", "a3"], False)
    table = awa("cron", "list", "--dsn", dsn, "--limit", "1")
    assert table.returncode == 0 and "a1" in table.stdout and "a2" not in table.stdout
    assert table.stdout.splitlines()[-1] == (
        "first 1 schedules shown, more match: --limit N for more, --all for every one")
    assert "more match" not in awa("cron", "list", "--dsn", dsn, "--all").stdout
    both = awa("cron", "list", "--dsn", dsn, "--all", "--limit", "2")
    assert (both.returncode, both.stderr) == (1, "error: --limit and --all: pass one of them, not both\n")
