"""deploy/requirements-image.txt: the image's dependencies pinned and hashed, for
`pip install --require-hashes` in deploy/Dockerfile.

    python tools/image_lock.py

The set is what `pip install .` resolves under constraints.txt (the versions the suite
ran), read from pip's own resolution report; each version's hashes are every file PyPI
holds for it that a Linux image of CPython 3.11 may install (x86_64 or aarch64 wheels,
pure-Python wheels, the sdist), from PyPI's simple index (its JSON form). Run it after
changing constraints.txt; tests/deploy/test_image_lock.py checks the file against both.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "deploy" / "requirements-image.txt"
INDEX = "https://pypi.org/simple/{name}/"
HEADER = """\
# The image's dependencies: what `pip install .` resolves under constraints.txt, each pinned
# and hashed (every file PyPI holds for that version that a Linux image of CPython 3.11 may
# install). Written by `python tools/image_lock.py`; do not edit by hand.
"""


def resolved() -> dict[str, str]:
    """name -> version of every dependency `pip install .` would install here."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), "-c", str(REPO / "constraints.txt"), str(REPO)], check=True)
        found = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in found if i["metadata"]["name"] != "awa-tui"}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installable(filename: str, version: str, name: str) -> bool:
    """A file of `version` that pip on Linux CPython 3.11 (x86_64 or aarch64) may choose."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    if not filename.lower().startswith(f"{stem}-{version}".lower()):
        return False
    if filename.endswith(".tar.gz"):
        return True
    if not filename.endswith(".whl"):
        return False
    _, _, python, abi, platform = filename[:-4].rsplit("-", 4)
    pythons = set(python.split("."))
    if not pythons & {"py3", "py2.py3", "cp311", "cp36", "cp37", "cp38", "cp39", "cp310", "py311"} and \
            not any(p.startswith("py3") for p in pythons):
        return False
    if abi not in ("none", "abi3", "cp311"):
        return False
    return platform == "any" or (("manylinux" in platform) and ("x86_64" in platform or "aarch64" in platform))


def hashes(name: str, version: str) -> list[str]:
    request = urllib.request.Request(INDEX.format(name=normalise(name)),
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    found = sorted({f["hashes"]["sha256"] for f in files if installable(f["filename"], version, name)})
    if not found:
        raise SystemExit(f"{name}=={version}: PyPI lists no file a Linux CPython 3.11 image may install")
    return found


def main() -> None:
    lines = [HEADER]
    for name, version in sorted(resolved().items(), key=lambda kv: normalise(kv[0])):
        digests = " \\\n    ".join(f"--hash=sha256:{h}" for h in hashes(name, version))
        lines.append(f"{normalise(name)}=={version} \\\n    {digests}\n")
    LOCK.write_text("".join(lines))
    print(f"wrote {LOCK.relative_to(REPO)}")


if __name__ == "__main__":
    main()
