"""`make release-check`: can this tree be released as the version it names?

1. CHANGELOG.md has an entry for the version (`## [X.Y.Z]`), cut from `[Unreleased]`.
2. The sdist and the wheel build from a copy of the tree (no stray file of a checkout
   goes in), and their metadata passes `twine check`.
3. The wheel installs into a clean virtual environment outside the repository, and its
   `awa-tui` names the version, migrates a scratch database and runs `check` on it.
4. The upgrade tests pass: every earlier schema of main's history upgraded by this tree,
   and the previous release's runtime side by side through migrate, roll forward and back.

The build tools (build, twine) live in a venv of their own under .cache/ (git-ignored).
The database server is AWA_TEST_DATABASE_URL's, else the embedded Postgres.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / ".cache" / "release-tools"


def say(text: str) -> None:
    print(f"release-check: {text}", flush=True)


def fail(text: str) -> None:
    print(f"release-check: FAILED: {text}", file=sys.stderr)
    raise SystemExit(1)


def run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(str(a) for a in args[:3])} ...: {(done.stderr or done.stdout).strip()[-2000:]}")
    return done.stdout


def version() -> str:
    text = (ROOT / "awa_tui" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert match is not None
    return match.group(1)


def tools() -> Path:
    python = TOOLS / "bin" / "python"
    if not python.exists():
        run(sys.executable, "-m", "venv", TOOLS)
        run(python, "-m", "pip", "install", "-q", "build", "twine")
    return python


def admin_dsn() -> str:
    external = os.environ.get("AWA_TEST_DATABASE_URL")
    if external:
        return external
    sys.path.insert(0, str(ROOT))
    from awa_tui import embedded

    return embedded.ensure_running().dsn("postgres")


def main() -> int:
    release = version()
    if not re.search(rf"^## \[{re.escape(release)}\]", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE):
        fail(f"CHANGELOG.md has no entry `## [{release}]`: cut it from [Unreleased] first")
    python = tools()
    with tempfile.TemporaryDirectory(prefix="awa-release-") as scratch:
        work = Path(scratch)
        # The files git tracks, and only those, as a clean clone would have them.
        tree = work / "tree"
        tracked = run("git", "-C", ROOT, "ls-files", "-z").split("\0")
        for name in filter(None, tracked):
            source = ROOT / name
            if source.is_file():
                (tree / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tree / name)
        dist = work / "dist"
        run(python, "-m", "build", "--sdist", "--wheel", "--outdir", dist, tree)
        built = sorted(dist.iterdir())
        names = [p.name for p in built]
        if names != [f"awa_tui-{release}-py3-none-any.whl", f"awa_tui-{release}.tar.gz"]:
            fail(f"unexpected build output: {names}")
        run(python, "-m", "twine", "check", "--strict", *built)
        say(f"built and checked {', '.join(names)}")
        venv = work / "venv"
        run(sys.executable, "-m", "venv", venv)
        constraints = ROOT / "constraints.txt"
        run(venv / "bin" / "pip", "install", "-q", "-c", constraints, built[0])
        command = venv / "bin" / "awa-tui"
        shown = run(command, "--version", cwd=work).strip()
        if not shown.startswith(f"awa-tui {release} "):
            fail(f"the installed wheel says {shown!r}")
        admin = admin_dsn()
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        name = f"awa_release_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            params = conninfo_to_dict(admin)
            params["dbname"] = name
            dsn = make_conninfo(**params)
            env = {k: v for k, v in os.environ.items() if k not in ("AWA_DATABASE_URL", "DATABASE_URL")}
            run(command, "migrate", "--dsn", dsn, cwd=work, env=env)
            checked = subprocess.run([str(command), "check", "--dsn", dsn], cwd=work, env=env, capture_output=True,
                                     text=True)
            # An empty database has no leader (critical, 2); 3 would mean check could not tell.
            if checked.returncode not in (0, 1, 2) or not checked.stdout:
                fail(f"check on the migrated database: {checked.stderr.strip()}")
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        say(f"the wheel installs outside the repository, names {release}, migrates and checks")
    tests = ["tests/engine/migrations/test_upgrade_history.py", "tests/reliability/test_rolling_deploy.py"]
    pytest = ROOT / ".venv" / "bin" / "pytest"
    done = subprocess.run([str(pytest), "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT)
    if done.returncode != 0:
        fail("the upgrade tests failed")
    say(f"{release} is ready to release")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
