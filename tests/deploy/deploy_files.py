"""The files of deploy/, read as their tools read them, and argv parsed by the real
`awa-tui` command (awa_tui.cli.command_tree): a flag a manifest names must exist."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUBERNETES = DEPLOY / "kubernetes"


def parse_argv(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """(subcommand, its parameters) as `awa-tui` would parse `argv` (its first word is
    `awa-tui`); an unknown command or flag raises the CLI's usage error."""
    from awa_tui.cli import command_tree

    assert argv[0] == "awa-tui", argv
    group = command_tree()
    ctx = group.make_context("awa-tui", list(argv[1:]))
    name, command, rest = group.resolve_command(ctx, [*getattr(ctx, "_protected_args", []), *ctx.args])
    assert name is not None and command is not None
    return name, command.make_context(name, rest, parent=ctx).params


def manifests() -> dict[str, list[dict[str, Any]]]:
    """Every YAML file of deploy/kubernetes by name, as its documents."""
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
            for p in sorted(KUBERNETES.glob("*.yaml"))}


def one(kind: str) -> dict[str, Any]:
    found = [d for docs in manifests().values() for d in docs if d.get("kind") == kind]
    assert len(found) == 1, f"{len(found)} {kind} manifests"
    return found[0]


def dockerfile(path: Path = DEPLOY / "Dockerfile") -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, continuation lines joined."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines()
                                         if not line.lstrip().startswith("#")))
    out = []
    for line in text.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def exec_form(arguments: str) -> list[str]:
    """A JSON-array (exec form) instruction argument; a shell form fails the test."""
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), arguments
    return value


def unit(path: Path = DEPLOY / "systemd" / "awa-tui.service") -> dict[str, list[tuple[str, str]]]:
    """A systemd unit's sections, each as (key, value) in order (keys may repeat)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = []
            continue
        key, _, value = line.partition("=")
        assert current is not None
        sections[current].append((key, value))
    return sections


def values(section: list[tuple[str, str]], key: str) -> list[str]:
    return [v for k, v in section if k == key]


def split(command: str) -> list[str]:
    return shlex.split(command)
