"""deploy/Dockerfile. Building it needs a container builder and the base image's registry,
which a test machine need not have, so the build itself is `make image-check`
(deploy/image-check.sh), not a test; these check what the image would do without
one: its instructions as Docker reads them,
its entry point and health check parsed by the real CLI, the files it copies present and not
excluded, and the health check run against the runtime the entry point starts."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from deploy_files import REPO, dockerfile, exec_form, parse_argv
from deploy_run import free_port, localise, probe


def instructions(word: str) -> list[str]:
    return [args for w, args in dockerfile() if w == word]


def final_stage() -> list[tuple[str, str]]:
    steps = dockerfile()
    last_from = max(i for i, (w, _) in enumerate(steps) if w == "FROM")
    return steps[last_from:]


def last(word: str) -> str:
    """The instruction of the final stage that counts (the last one, as Docker reads it)."""
    found = [args for w, args in final_stage() if w == word]
    assert found, f"no {word} in the final stage"
    return found[-1]


def entrypoint() -> list[str]:
    return exec_form(last("ENTRYPOINT"))


def healthcheck() -> tuple[dict[str, str], list[str]]:
    options, _, command = last("HEALTHCHECK").partition(" CMD ")
    flags = dict(re.findall(r"--([a-z-]+)=(\S+)", options))
    return flags, exec_form(command)


def test_a_slim_python_base_in_every_stage() -> None:
    args = dict(a.split("=", 1) for a in instructions("ARG") if "=" in a)
    bases = [a.split()[0].replace("${PYTHON_IMAGE}", args.get("PYTHON_IMAGE", "")) for a in instructions("FROM")]
    assert len(bases) == 2 and all(re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", b) for b in bases), bases


def test_the_final_stage_runs_as_a_numeric_non_root_user_it_creates() -> None:
    user = last("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    created = " ".join(a for w, a in final_stage() if w == "RUN")
    assert f"--uid {uid}" in created and f"--gid {gid}" in created
    # USER comes before ENTRYPOINT: nothing the image runs is root's.
    words = [w for w, _ in final_stage()]
    assert words.index("USER") < words.index("ENTRYPOINT")


def test_the_entry_point_is_the_runtime_and_parses_with_the_default_arguments() -> None:
    argv = [*entrypoint(), *exec_form(last("CMD"))]
    name, params = parse_argv(argv)
    assert name == "run" and params["demo"] is True  # `docker run IMAGE` alone: the demo
    name, params = parse_argv([*entrypoint(), "--app", "billing.schedules:setup", "--dsn-file", "/run/secrets/dsn"])
    assert (name, params["app_ref"], params["dsn_file"]) == ("run", "billing.schedules:setup", "/run/secrets/dsn")
    assert "--dsn" not in argv and not any("postgres" in a for a in argv)
    assert not [e for e in instructions("ENV") if "DATABASE_URL" in e or "PGPASSWORD" in e]
    assert last("STOPSIGNAL") == "SIGTERM"  # what the runtime stops cleanly on


def test_the_health_check_probes_the_port_the_runtime_serves_and_exposes() -> None:
    flags, command = healthcheck()
    name, params = parse_argv(command)
    _, run = parse_argv(entrypoint())
    served = int(run["metrics_addr"].rpartition(":")[2])
    assert name == "check" and params["alive"] == f"127.0.0.1:{served}" and params["registered"] is False
    assert params["dsn"] is None and params["dsn_file"] is None  # liveness never needs the database
    assert last("EXPOSE") == str(served) == "9464"
    assert set(flags) == {"interval", "timeout", "start-period", "retries"}
    # The start period covers registering and the first sync at a million schedules (~30 s).
    assert int(flags["start-period"].rstrip("s")) >= 60


def dockerignore() -> list[str]:
    return [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def ignored(path: str) -> bool:
    """Whether the build context leaves `path` out (.dockerignore: last matching rule wins)."""
    verdict = False
    for rule in dockerignore():
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/").removeprefix("**/")
        if any(fnmatch.fnmatch(part, pattern) for part in [path, *Path(path).parts]) or path.startswith(pattern + "/"):
            verdict = not negate
    return verdict


def test_what_the_build_copies_is_in_the_context_and_nothing_else_is() -> None:
    sources = [a.split()[:-1] for a in instructions("COPY") if not a.startswith("--from")]
    copied = [s for group in sources for s in group]
    assert copied == ["pyproject.toml", "README.md", "constraints.txt", "deploy/requirements-image.txt", "awa_tui"]
    for source in copied:
        assert (REPO / source).exists() and not ignored(source), source
    assert not ignored("awa_tui/engine/client.py")
    for private in (".venv/bin/python", ".git/config", "tests/conftest.py", "bench/run.py", "dsn",
                    "deploy/kubernetes/runtime.yaml"):
        assert ignored(private), private


def test_the_health_check_passes_against_the_entry_points_runtime_and_fails_once_it_stops(
        launch: Any, dsn_file: Path) -> None:
    """The image's entry point, as `docker run IMAGE --app ... --dsn-file ...` starts it."""
    port = free_port()
    argv = localise([*entrypoint(), "--app", "probe_app:setup", "--dsn-file", "/run/secrets/dsn"],
                    secret="/run/secrets/dsn", dsn_file=dsn_file, port=port)
    runtime = launch(argv)
    check = localise(healthcheck()[1], secret="", dsn_file=dsn_file, port=port)
    code, lines = probe(check)
    assert code == 0 and lines[0].endswith("running, 7 loops, none stuck"), lines
    assert runtime.stop() == 0
    assert probe(check)[0] == 2


def test_the_build_steps_install_a_working_awa_tui_from_the_build_context(tmp_path: Path, empty_dsn: str) -> None:
    """The build stage without a builder: the files the Dockerfile copies, and only those,
    built into a wheel (as `pip install .` does) and installed into a fresh virtual
    environment whose `awa-tui` then runs and migrates a database from its own package data.
    The dependencies are this suite's, not resolved afresh (no registry is needed)."""
    context = tmp_path / "context"
    context.mkdir()
    for source in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / source, context / source)
    shutil.copytree(REPO / "awa_tui", context / "awa_tui", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(context)], check=True, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("awa_tui-*.whl")
    venv = tmp_path / "opt-awa-tui"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "--compile", str(wheel)],
                   check=True, timeout=300)
    # The dependencies: this suite's site-packages, after the new environment's own.
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "suite-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # Run away from this checkout (a `python -c` looks in its working directory first).
    outside = {"cwd": tmp_path, "env": {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}}
    where = subprocess.run([str(python), "-c", "import awa_tui; print(awa_tui.__file__)"],
                           capture_output=True, text=True, check=True, **outside).stdout.strip()
    assert where.startswith(site), where  # the installed copy, not this checkout
    awa_tui_bin = str(venv / "bin" / "awa-tui")
    help_text = subprocess.run([awa_tui_bin, "check", "--help"], capture_output=True, text=True, timeout=120,
                               **outside)
    assert help_text.returncode == 0 and "--alive" in help_text.stdout and "--registered" in help_text.stdout
    migrated = subprocess.run([awa_tui_bin, "migrate", "--dsn", empty_dsn, "--json"], capture_output=True,
                              text=True, timeout=120, **outside)
    from awa_tui.engine.migrations import code_version

    assert migrated.returncode == 0, migrated.stderr
    assert f'"version": {code_version()}' in migrated.stdout
