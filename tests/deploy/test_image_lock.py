"""deploy/requirements-image.txt: the image installs exactly the package's runtime
dependencies, at the versions the suite ran (constraints.txt), each checked against hashes
that real files on the index have (pip downloads them here in --require-hashes mode)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

from deploy_files import REPO
from packaging.markers import default_environment
from packaging.requirements import Requirement
from test_dockerfile import instructions

LOCK = REPO / "deploy" / "requirements-image.txt"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of each entry (an entry and its continuation lines)."""
    entries: dict[str, tuple[str, list[str]]] = {}
    text = re.sub(r"\\\n\s*", " ", LOCK.read_text())
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pin, *options = line.split()
        name, version = pin.split("==")
        entries[name] = (version, [o.removeprefix("--hash=sha256:") for o in options])
    return entries


def _closure() -> dict[str, str]:
    """The installed runtime dependencies of awa-tui, followed through their own, with the
    extras each requirement asks for (`psycopg[binary]`), none of awa-tui's own."""
    seen: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [("awa-tui", frozenset())]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in done:
            continue
        done.add((name, extras))
        for text in importlib.metadata.distribution(name).requires or []:
            req = Requirement(text)
            wanted = [{**default_environment(), "extra": extra} for extra in ("", *extras)]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in wanted):
                continue
            dependency = _norm(req.name)
            seen.setdefault(dependency, importlib.metadata.version(dependency))
            todo.append((dependency, frozenset(req.extras)))
    return seen


def _constraints() -> dict[str, str]:
    pins = [line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")]
    return {_norm(name): version.strip() for name, version in pins}


def test_the_lock_pins_the_runtime_dependencies_at_the_suites_versions_each_hashed() -> None:
    locked = _locked()
    closure, constraints = _closure(), _constraints()
    assert {name: version for name, (version, _) in locked.items()} == closure
    assert sorted(closure.keys() - constraints.keys()) == []  # every one pinned in constraints.txt
    assert {name: constraints[name] for name in closure} == closure
    assert all(hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes) for _, hashes in locked.values())


def test_the_image_installs_the_dependencies_only_by_their_hashes() -> None:
    (build,) = [r for r in instructions("RUN") if "requirements-image.txt" in r]
    assert "pip install --compile --require-hashes --no-deps -r requirements-image.txt" in build
    assert "pip install --compile --no-deps ." in build and "-c constraints.txt" not in build


def test_the_hashes_are_those_of_the_files_on_the_index(tmp_path: Path) -> None:
    """pip fetches this platform's file of every entry and refuses any whose hash is not
    listed (the control: one hash changed is refused by name)."""
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--require-hashes", "--no-deps",
           "--only-binary=:all:", "-d", str(tmp_path / "files")]
    done = subprocess.run([*pip, "-r", str(LOCK)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "files").iterdir())) == len(_locked())
    version = _locked()["six"][0]
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(f"six=={version} --hash=sha256:{'0' * 64}\n")
    refused = subprocess.run([*pip, "-r", str(wrong)], capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0 and "THESE PACKAGES DO NOT MATCH THE HASHES" in refused.stderr, refused.stderr
