"""The CLI's command tree, walked from the typer app itself, so commands added later are
swept too: every leaf command with placeholder arguments, and whether it mutates."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
import typer.core
import typer.main

# Never swept: `run` runs until stopped, `db` manages the embedded server, `migrate` is
# the cure the others prescribe.
# `check` exits 1 and 2 with a report, not an error (S43): tests/engine/health/test_check_cli.py.
# `forward` is DDL an administrator applies (as `db grants`), printed unless --apply: its
# refusals (no awa schema, no Procrastinate, bad names) are test_forward_procrastinate.py's.
NOT_SWEPT = {("run",), ("migrate",), ("db",), ("check",), ("forward",)}


# Required options whose placeholder must be well-formed to reach the database (`--dates`:
# a file that exists, so `calendar set` gets as far as the database).
OPTION_DEFAULTS = {"--older-than": "14d", "--from": "2025-01-01T00:00:00Z", "--to": "2025-01-01T01:00:00Z",
                   "--until": "2h", "--kind": "notify",
                   "--dates": str(Path(__file__).with_name("placeholder-dates.txt"))}
# A required option that means something else for one command: `import pg-cron --from` is the
# pg_cron server (unreachable here: the database the sweep points at refuses first).
COMMAND_OPTION_DEFAULTS = {("import", "pg-cron"): {"--from": "host=127.0.0.1 port=1 dbname=pg_cron_source"}}
# Commands that refuse before any database without one of their optional settings (`cron
# edit` with nothing to change, a notify sink without its channel): what the sweep gives them.
EXTRA_OPTIONS = {("cron", "edit"): ["--cron", "0 * * * *"],
                 ("cron", "create"): ["--cron", "0 * * * *", "--kind", "rel.kind"],
                 ("alerts", "sinks", "add"): ["--channel", "awa_alerts"]}


@dataclass(frozen=True)
class Leaf:
    path: tuple[str, ...]
    arguments: tuple[str, ...]  # names of its positional arguments
    required_options: tuple[str, ...]
    mutates: bool  # takes the audited --operator label: it changes something and is audited

    numeric: tuple[str, ...] = ()  # arguments that take an integer (a job id): default "1"

    def argv(self, values: dict[str, str] | None = None, default: str = "rel-x") -> list[str]:
        """The command with each argument filled from `values` by name (else `default`)."""
        values = values or {}
        out = [*self.path, *(values.get(a, "1" if a in self.numeric else default) for a in self.arguments)]
        defaults = {**OPTION_DEFAULTS, **COMMAND_OPTION_DEFAULTS.get(self.path, {})}
        for opt in self.required_options:
            out += [opt, values.get(opt.lstrip("-"), defaults.get(opt, default))]
        return out + EXTRA_OPTIONS.get(self.path, [])


def _load() -> typer.core.TyperGroup:
    import awa_tui.cli as cli

    for module in pkgutil.iter_modules(cli.__path__):
        importlib.import_module(f"awa_tui.cli.{module.name}")
    group = typer.main.get_command(cli.app)
    assert isinstance(group, typer.core.TyperGroup)
    return group


def leaves() -> list[Leaf]:
    found: list[Leaf] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        if any(path[: len(skip)] == skip for skip in NOT_SWEPT):
            return
        if isinstance(cmd, typer.core.TyperGroup):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, (*path, name))
            return
        args = tuple(p.name or "" for p in cmd.params if isinstance(p, typer.core.TyperArgument))
        options = [p for p in cmd.params if isinstance(p, typer.core.TyperOption)]
        required = tuple(p.opts[0] for p in options if p.required)
        # `audit --operator X` is a filter, not a label: the label's help says it is recorded.
        mutates = any("--operator" in p.opts and "recorded in the audit trail" in (p.help or "") for p in options)
        # The parser's integer types, by the name they print ("int range" for a job id).
        numeric = tuple(p.name or "" for p in cmd.params
                        if isinstance(p, typer.core.TyperArgument)
                        and getattr(p.type, "name", "") in ("int", "int range", "integer", "integer range"))
        found.append(Leaf(path, args, required, mutates, numeric))

    walk(_load(), ())
    return found


@dataclass
class Outcome:
    argv: Sequence[str | bytes]
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def describe(self) -> str:
        return f"awa-tui {list(self.argv)!r} -> {self.code}\nstderr: {self.stderr[-2000:]}"


def run_cli(argv: Sequence[str | bytes], env: dict[str, str], timeout: float = 60) -> Outcome:
    """`python -m awa_tui ARGS` with a clean environment of our choosing."""
    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"awa_tui", *(os.fsencode(a) for a in argv)],
        capture_output=True, timeout=timeout, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[2],
    )
    return Outcome(argv, proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))


def run_cli_in_terminal(argv: Sequence[str], env: dict[str, str], timeout: float = 60) -> Outcome:
    """`python -m awa_tui ARGS` with stdin and stdout on a pseudo-terminal (the console refuses
    to start without one) and stderr captured: for the console's refusals that need a database
    (which come after its terminal check)."""
    master, slave = os.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "awa_tui", *argv], stdin=slave, stdout=slave, stderr=subprocess.PIPE,
            timeout=timeout, env={**os.environ, **env}, cwd=Path(__file__).resolve().parents[2],
        )
    finally:
        os.close(slave)
        os.close(master)
    return Outcome(argv, proc.returncode, "", proc.stderr.decode(errors="replace"))


def assert_one_line_error(out: Outcome, *, contains: Sequence[str] = ()) -> None:
    """A failure is exactly one line on stderr, starting `error:`, naming what it must."""
    assert out.code != 0, out.describe()
    assert "Traceback" not in out.stderr, out.describe()
    lines = out.error_lines
    assert len(lines) == 1 and lines[0].startswith("error: "), out.describe()
    if contains:
        assert any(c.lower() in lines[0].lower() for c in contains), out.describe()
