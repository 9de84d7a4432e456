"""The compiler's packages form layers: a module imports only from its own layer or below.

Layers, lowest first (docs/DESIGN.md):

0. ``mcec.span``, ``mcec.diagnostics``, ``mcec.render`` — what every phase reports with;
   ``mcec.gcpause`` — the cycle collector paused while a phase builds its trees;
1. ``mcec.syntax`` — text to tree;
2. ``mcec.check`` — tree to typed program;
3. ``mcec.codegen`` — typed program to Python;
4. ``mcec.compiler`` (the phases chained), ``mcec.run`` (running what was built);
5. ``mcec.tools`` — the pure cores of fmt and graph;
6. ``mcec.cli``, ``mcec.integrations``, ``mcec.lsp`` — commands, file I/O, pytest and hatch, the
   language server.

``mcec`` itself (the facade) and ``mcec.__main__`` stand above all. Lark is
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
    "mcec.syntax": 1,
    "mcec.check": 2,
    "mcec.codegen": 3,
    "mcec.compiler": 4,
    "mcec.run": 4,
    "mcec.tools": 5,
    "mcec.cli": 6,
    "mcec.integrations": 6,
    "mcec.lsp": 6,
}
#: Third-party packages only one part of the compiler may import.
CONFINED: dict[str, tuple[str, ...]] = {
    "lark": ("mcec.syntax",),
    "libcst": ("mcec.codegen",),
    "black": ("mcec.codegen",),
    # the language server's protocol: only `mcec lsp` loads it
    "pygls": ("mcec.lsp",),
    "lsprotocol": ("mcec.lsp",),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int | None:
    for prefix, layer in sorted(LAYERS.items(), key=lambda kv: -len(kv[0])):
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            if module == "mcec":  # `from mcec import syntax`: the submodules are what is imported
                found.extend((node.lineno, f"mcec.{alias.name}") for alias in node.names)
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
