"""The repository explains itself: every rule id cited resolves in docs/behaviour.md, every
test the docs name exists, every relative link resolves, and nothing points outside the
repository. No database needed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEHAVIOUR = ROOT / "docs" / "behaviour.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README.md"]

# Where rule ids are cited, and which files there are text worth reading.
CITING_DIRS = ("awa_tui", "tests", "bench")
TEXT_SUFFIXES = {".py", ".sql", ".md", ".tcss", ".toml", ".txt"}
SKIP_DIRS = {"__pycache__", "__snapshots__", ".pg", "results", ".venv-awa-pg", ".venv-procrastinate", ".hypothesis"}

# `S11`, and ranges such as `S26-S33` or `S26..S33` (each id in between is cited too).
RULE_CITE = re.compile(r"\bS(\d+)(?:\s?(?:-|\.\.|\u2013)\s?S(\d+))?\b")
RULE_HEADING = re.compile(r"^## S(\d+) \S", re.MULTILINE)

# Pointers outside the repository. Built from pieces so this file does not match itself.
FORBIDDEN = re.compile(
    "|".join([r"\.\./" + "shared", "shared" + "/spec", "SPEC" + r"\.md", "NOTES" + r"\.md", "DESIGN" + r"\.md"])
    .encode()
)

# A pointer into an issue tracker ("issue 18"), which a reader of the repository cannot
# follow: the reason is written out, or a rule id of docs/behaviour.md cited, instead.
TRACKER_POINTER = re.compile(r"\bissue\s+#?\d+\b", re.IGNORECASE)
# Where such pointers are not allowed: the product, its docs, deploy files and the bench.
# CHANGELOG.md and tests/ are history and may keep them.
POINTER_FREE = ("awa_tui/", "docs/", "README.md", "deploy/", "bench/")


def rule_ids(text: str) -> set[int]:
    ids: set[int] = set()
    for match in RULE_CITE.finditer(text):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        ids.update(range(first, max(first, last) + 1))
    return ids


def citing_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in CITING_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES and not SKIP_DIRS & set(path.parts):
                files.append(path)
    return files


def tracked_files() -> list[str]:
    """Files git tracks, plus new ones it would add (not ignored): what a commit ships."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()
    return sorted({name for name in out.split("\0") if name})


def without_code(markdown: str) -> str:
    """Markdown with fenced blocks and inline code removed (links there are not links)."""
    markdown = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", markdown)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown_file: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", markdown_file.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def test_every_cited_rule_has_a_section_in_behaviour_md() -> None:
    headings = [int(n) for n in RULE_HEADING.findall(BEHAVIOUR.read_text())]
    assert len(headings) == len(set(headings)), "a rule id has two sections"
    missing = {
        f"S{rule}: {path.relative_to(ROOT)}"
        for path in citing_files()
        for rule in rule_ids(path.read_text(errors="replace"))
        if rule not in headings
    }
    assert sorted(missing) == []


def test_every_rule_section_names_a_test() -> None:
    sections = re.split(r"^(?=## S\d+ )", BEHAVIOUR.read_text(), flags=re.MULTILINE)[1:]
    ids = [int(RULE_HEADING.match(s).group(1)) for s in sections]  # type: ignore[union-attr]
    assert ids[:38] == list(range(1, 39)) and ids == list(range(1, len(ids) + 1))  # S1..S38, in order, no gap
    untested = [s.splitlines()[0] for s in sections if "`tests/" not in s]
    assert untested == []


def test_every_test_and_file_the_docs_name_exists() -> None:
    """`tests/x.py::name` and `::name` (same file as the previous one) must be real
    functions; any other `awa_tui/...`, `tests/...` or `bench/...` path must exist."""
    wrong = []
    for doc in DOCS:
        current: Path | None = None
        for code in re.findall(r"`([^`\n]+)`", doc.read_text()):
            # Source files only: directories such as bench/.pg are made at run time.
            match = re.fullmatch(r"((?:awa_tui|tests|bench)/[\w./-]+\.(?:py|sql|md|toml))?(?:::(\w+))?", code)
            if not match or not (match.group(1) or match.group(2)):
                continue
            if match.group(1):
                current = ROOT / match.group(1)
                if not current.exists():
                    wrong.append(f"{doc.name}: {match.group(1)} does not exist")
                    continue
            name = match.group(2)
            if name is None:
                continue
            if current is None or not current.is_file():
                wrong.append(f"{doc.name}: ::{name} follows no file")
            elif not re.search(rf"^\s*(async\s+)?def {name}\(", current.read_text(), re.MULTILINE):
                wrong.append(f"{doc.name}: {current.relative_to(ROOT)}::{name} is not defined")
    assert wrong == []


def test_every_relative_link_points_at_a_file_that_exists() -> None:
    link = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
    broken = []
    for doc in DOCS:
        for match in link.finditer(without_code(doc.read_text())):
            target = match.group(1) or match.group(2)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, fragment = target.partition("#")
            path = (doc.parent / path_part).resolve() if path_part else doc
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif fragment and path.suffix == ".md" and fragment not in anchors(path):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_nothing_points_outside_the_repository() -> None:
    offenders = []
    for name in tracked_files():
        if name.startswith("tests/tui/__snapshots__/") and name.endswith(".svg"):
            continue  # rendered screens: their bytes are not prose
        path = ROOT / name
        if path.is_file():
            offenders += [f"{name}: {m.group().decode()}" for m in FORBIDDEN.finditer(path.read_bytes())]
    assert offenders == []


def tracker_pointers(name: str, text: str) -> list[str]:
    return [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in TRACKER_POINTER.finditer(text)]


OLD_MIGRATION = r"awa_tui/engine/migrations/v0(0\d|1[0-8])_\w+\.sql"


def test_no_issue_tracker_pointers() -> None:
    offenders = []
    # An undoing (migrations/down/) restores an old migration's function word for word: a
    # line it shares with one of those keeps that migration's words.
    old_lines = {line for name in tracked_files() if re.fullmatch(OLD_MIGRATION, name)
                 for line in (ROOT / name).read_text().splitlines()}
    for name in tracked_files():
        path = ROOT / name
        # A migration file is history databases have applied: never edited, so an old one
        # keeps its words (a new one must not add any); docs/schema.md prints their functions.
        if re.fullmatch(OLD_MIGRATION, name) or name == "docs/schema.md":
            continue
        if name.startswith(POINTER_FREE) and path.is_file():
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue  # not text
            lines = text.splitlines()
            offenders += [o for o in tracker_pointers(name, text)
                          if not (name.startswith("awa_tui/engine/migrations/down/")
                                  and lines[int(o.split(":")[1]) - 1] in old_lines)]
    assert offenders == []


def test_a_tracker_pointer_is_found_and_words_about_issues_are_not() -> None:
    """Negative control of the check above."""
    text = '# why (issue 18)\n"""Issue 16: the form"""\nsee ISSUE #7\nthe `issues` command; an issue 2x worse\n'
    assert tracker_pointers("f.py", text) == ["f.py:1: issue 18", "f.py:2: Issue 16", "f.py:3: ISSUE #7"]
