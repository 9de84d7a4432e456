"""The compiler's packages form layers: a module imports only from its own layer or below.

Layers, lowest first (docs/DESIGN.md):

0. ``mcec.span``, ``mcec.diagnostics``, ``mcec.render`` — what every phase reports with;
   ``mcec.gcpause`` — the cycle collector paused while a phase builds its trees;
   ``mcec.version`` — the compiler's ``__version__``;
1. ``mcec.syntax`` — text to tree;
2. ``mcec.check`` — tree to typed program;
3. ``mcec.codegen`` — typed program to Python;
4. ``mcec.compiler`` (the phases chained), ``mcec.run`` (running what was built),
   ``mcec.plans`` (checked plans: the check of a plan and the engine that runs it),
   ``mcec.fingerprint`` (what a durable run records of its spec);
5. ``mcec.tools`` — the pure cores of fmt and graph; ``mcec.eval`` — a pipeline scored over a dataset;
6. ``mcec.cli``, ``mcec.integrations``, ``mcec.lsp`` — commands, file I/O, pytest and hatch, the
   language server; ``mcec.durable`` — durable runs from Python (a run database); ``mcec.console`` —
   the web console over a run database.

``mcec`` itself (the facade) and ``mcec.__main__`` stand above all: no module
of the compiler imports a name from the facade. Lark is
imported only by the syntax phase, libcst and black only by code generation,
and the runtime ``agentmonad`` never imports ``mcec``. Imports inside functions
count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS: dict[str, int] = {
    "mcec.span": 0,
    "mcec.diagnostics": 0,
    "mcec.render": 0,
    "mcec.gcpause": 0,
    "mcec.memo": 0,
    "mcec.version": 0,
    "mcec.syntax": 1,
    "mcec.sites": 1,  # a span as the runtime's Site: the span and agentmonad only
    "mcec.check": 2,
    "mcec.codegen": 3,
    "mcec.compiler": 4,
    "mcec.run": 4,
    "mcec.plans": 4,
    "mcec.fingerprint": 2,  # a checked program's digest: it reads the checker's types only
    "mcec.tools": 5,
    "mcec.eval": 5,
    "mcec.cli": 6,
    "mcec.integrations": 6,
    "mcec.lsp": 6,
    "mcec.durable": 6,
    "mcec.console": 6,
}
#: Third-party packages only one part of the compiler may import.
CONFINED: dict[str, tuple[str, ...]] = {
    "lark": ("mcec.syntax",),
    "libcst": ("mcec.codegen",),
    "black": ("mcec.codegen",),
    # the language server's protocol: only `mcec lsp` loads it
    "pygls": ("mcec.lsp",),
    "lsprotocol": ("mcec.lsp",),
    # a run's progress on a terminal (`mcec run`), and its OpenTelemetry spans (the SDK configured
    # for `--otel`): only they load them
    "rich": ("mcec.run.progress", "mcec.eval.render", "mcec.eval.runner"),
    "opentelemetry": ("agentmonad.otel", "mcec.run.telemetry"),
    # the web console's server (the mcec[console] extra): only `mcec console` loads it
    "starlette": ("mcec.console", "mcec.cli.console"),
    "uvicorn": ("mcec.cli.console",),
}


def _dotted(path: Path, root: Path) -> str:
    """The module name of ``path`` under the import root ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_name(path: Path) -> str:
    return _dotted(path, ROOT)


def _import_statements(path: Path, module: str) -> list[tuple[int, str, list[str]]]:
    """Every import in ``path`` (the module ``module``), lazy and ``TYPE_CHECKING`` ones included:
    the line, the module it names (relative imports resolved) and, for ``from X import a, b``,
    the names it takes."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


def _layer(module: str) -> int | None:
    for prefix, layer in sorted(LAYERS.items(), key=lambda kv: -len(kv[0])):
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for line, module, names in _import_statements(path, _module_name(path)):
        found.append((line, module))
        if module == "mcec":  # `from mcec import syntax`: the submodules are what is imported
            found.extend((line, f"mcec.{name}") for name in names)
    return found


def test_no_module_imports_from_a_higher_layer() -> None:
    problems = []
    for path in sorted((ROOT / "mcec").rglob("*.py")):
        module = _module_name(path)
        own = _layer(module)
        if own is None:
            continue  # the facade and __main__
        for line, imported in _imports(path):
            target = _layer(imported)
            if target is not None and target > own:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {module} (layer {own}) imports {imported} (layer {target})")
    assert not problems, "\n".join(problems)


def test_no_module_imports_from_the_facade() -> None:
    """``from mcec import NAME`` inside the compiler names a submodule (``from mcec import syntax``),
    never one of the facade's own names (``__version__`` lives in ``mcec.version``, layer 0)."""
    problems = []
    for path in sorted((ROOT / "mcec").rglob("*.py")):
        module = _module_name(path)
        if module in ("mcec", "mcec.__main__"):
            continue
        for line, imported in _imports(path):
            if imported.startswith("mcec.") and _layer(imported) is None:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {imported} from the facade")
    assert not problems, "\n".join(problems)


def test_checked_plans_are_one_package() -> None:
    """The check of a plan and the engine that runs it live in ``mcec.plans``, not split between
    the checker and ``mcec.run``."""
    assert (ROOT / "mcec" / "plans" / "check.py").is_file() and (ROOT / "mcec" / "plans" / "engine.py").is_file()
    assert not (ROOT / "mcec" / "check" / "plans.py").exists() and not (ROOT / "mcec" / "run" / "plans.py").exists()


def test_every_module_of_the_compiler_has_a_layer() -> None:
    unplaced = [
        _module_name(p)
        for p in (ROOT / "mcec").rglob("*.py")
        if _layer(_module_name(p)) is None and _module_name(p) not in ("mcec", "mcec.__main__")
    ]
    assert not unplaced, unplaced


def test_libraries_stay_in_their_phase() -> None:
    problems = []
    for path in sorted((ROOT / "mcec").rglob("*.py")):
        module = _module_name(path)
        for line, imported in _imports(path):
            library = imported.split(".")[0]
            allowed = CONFINED.get(library)
            if allowed is not None and not any(module == a or module.startswith(a + ".") for a in allowed):
                problems.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {library}")
    assert not problems, "\n".join(problems)


def test_the_runtime_never_imports_the_compiler() -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{line}: imports {imported}"
        for path in sorted((ROOT / "runtime" / "agentmonad").rglob("*.py"))
        for line, imported in _imports(path)
        if imported == "mcec" or imported.startswith("mcec.")
    ]
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- the runtime's own layers

RUNTIME = ROOT / "runtime"
#: The runtime's core: the combinators, the interpreter loop, what compiled code calls. It runs
#: every construct of the language and so imports neither optional part above it.
RUNTIME_CORE = (
    "agentmonad.monad",
    "agentmonad.outcome",
    "agentmonad.concurrency",
    "agentmonad.control",
    "agentmonad.compiled",
    "agentmonad.contract",
    "agentmonad.errors",
    "agentmonad.merge",
    "agentmonad.steps",
    "agentmonad.plans",
    "agentmonad.usage",
    "agentmonad.freshness",
    "agentmonad._show",
)
#: The subpackages above the core: models, MCP tools, and durable runs (a journal a run attaches).
RUNTIME_SUBPACKAGES = ("agentmonad.llm", "agentmonad.mcp", "agentmonad.durable")


def _runtime_module(path: Path) -> str:
    return _dotted(path, RUNTIME)


def _runtime_modules() -> dict[str, Path]:
    return {_runtime_module(p): p for p in sorted((RUNTIME / "agentmonad").rglob("*.py"))}


def _runtime_imports(path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """The agentmonad modules ``path`` imports, with the line: ``from X import name`` counts as
    an import of ``X.name`` when that is a module, and lazy and ``TYPE_CHECKING`` imports count
    (each is a dependency all the same)."""
    found: list[tuple[int, str]] = []
    for line, target, names in _import_statements(path, _runtime_module(path)):
        found.append((line, target))
        found.extend((line, f"{target}.{name}") for name in names if f"{target}.{name}" in modules)
    return [(line, name) for line, name in found if name in modules]


def _runtime_graph() -> dict[str, dict[str, int]]:
    """Each agentmonad module to the modules its import runs, with the line that imports each.

    Importing ``agentmonad.llm.config`` runs ``agentmonad/llm/__init__.py`` first, so an import
    depends on the packages above the module as well — all but the top package ``agentmonad``,
    the facade that re-exports everything and that no module inside imports (checked below)."""
    modules = _runtime_modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        for line, imported in _runtime_imports(path, modules):
            parts = imported.split(".")
            for end in range(2, len(parts) + 1):
                target = ".".join(parts[:end])
                if target != name and target in modules and not name.startswith(target + "."):
                    edges.setdefault(target, line)
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated at the end), or
    ``None``: a depth-first search that stops at the first edge back onto its own path."""
    done: set[str] = set()
    for root in sorted(graph):
        if root in done:
            continue
        path = [root]
        stack = [iter(sorted(graph[root]))]
        while stack:
            child = next(stack[-1], None)
            if child is None:  # every import of path[-1] explored: no cycle through it
                stack.pop()
                done.add(path.pop())
            elif child in path:
                return [*path[path.index(child) :], child]
            elif child not in done:
                path.append(child)
                stack.append(iter(sorted(graph[child])))
    return None


def _show_cycle(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return " -> ".join(
        f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])
    ) + f" -> {cycle[-1]}"


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The search below is itself tested: it finds a circle of three and none in a chain."""
    assert _cycle({"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 1}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b": 1, "c": 1}, "b": {"c": 2}, "c": {}}) is None


def test_the_runtime_has_no_import_cycles() -> None:
    graph = _runtime_graph()
    cycle = _cycle(graph)
    assert cycle is None, "import cycle among agentmonad modules: " + _show_cycle(cycle, graph)


def test_no_runtime_module_imports_the_facade() -> None:
    """``agentmonad/__init__.py`` re-exports the core and both subpackages: a module inside that
    imported a name from it (``from agentmonad import Ok``, ``from .. import testing``) would
    depend on everything, and the graph above leaves the facade out."""
    modules = _runtime_modules()
    problems = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            if target == "agentmonad":
                names = [a.name for a in node.names if f"agentmonad.{a.name}" not in modules]
                if names:
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name} imports {names} from the facade")
    assert not problems, "\n".join(problems)


def test_the_runtime_core_imports_neither_subpackage() -> None:
    """What every run needs never imports the models (``agentmonad.llm``) or the MCP tools
    (``agentmonad.mcp``): they register what they need in the run context instead."""
    graph = _runtime_graph()
    missing = [m for m in RUNTIME_CORE if m not in graph]
    assert not missing, f"RUNTIME_CORE names modules that do not exist: {missing}"
    problems = []
    for start in RUNTIME_CORE:
        came_from: dict[str, str] = {start: start}
        queue = [start]
        while queue:  # breadth first: the shortest chain of imports to each module reached
            module = queue.pop(0)
            for target in graph[module]:
                if target in came_from:
                    continue
                came_from[target] = module
                if any(target == sub or target.startswith(sub + ".") for sub in RUNTIME_SUBPACKAGES):
                    chain = [target]
                    while chain[-1] != start:
                        chain.append(came_from[chain[-1]])
                    problems.append(" -> ".join(reversed(chain)))
                else:
                    queue.append(target)
    assert not problems, "the core reaches a subpackage:\n" + "\n".join(problems)


def test_the_runtime_has_one_context_variable() -> None:
    """A run's own state is one ``RunContext`` in one ``ContextVar`` (``agentmonad.context``):
    a capability that wants to see a run (a journal, an event sink) attaches there, not in a
    variable of its own that a ``par`` branch or a resumed run could miss."""
    made = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((RUNTIME / "agentmonad").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "ContextVar")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "ContextVar")
        )
    ]
    assert len(made) == 1 and made[0].startswith("runtime/agentmonad/context.py:"), made


def test_only_the_durable_backend_imports_dbos() -> None:
    """DBOS is the engine behind one module, ``agentmonad.durable.dbos`` (and what it uses below
    DBOS's public API, in ``agentmonad.durable.dbos_internals``): compiled code, the runtime's
    core and the compiler never import it (a run that is not durable never loads it)."""
    found = []
    for root, base in ((ROOT / "runtime" / "agentmonad", ROOT / "runtime"), (ROOT / "mcec", ROOT)):
        for path in sorted(root.rglob("*.py")):
            for line, target, _ in _import_statements(path, _dotted(path, base)):
                if target == "dbos" or target.startswith("dbos."):
                    found.append(f"{path.relative_to(ROOT)}:{line}")
    backend = ("runtime/agentmonad/durable/dbos.py:", "runtime/agentmonad/durable/dbos_internals.py:")
    assert found and all(f.startswith(backend) for f in found), found
