"""The folders are the layers (docs/design.md §1), and the code keeps them: the import graph of
`avatar/`, read from the source (imports inside functions and under TYPE_CHECKING included),
has no cycle and no arrow from a lower layer up to a higher one.

The layers, from the ground up (a module's layer is the folder right under `avatar/`):
core < policy < sessions < native < providers < bridges < handoff < library < engine < server
< cli.
The modules at the top of the package (`avatar`, `avatar.events`, `avatar.permissions`, the
public names) sit above them all, and nothing inside imports them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

AVATAR = Path(__file__).resolve().parents[2] / "avatar"
LAYERS = (
    "core",
    "policy",
    "sessions",
    "native",
    "providers",
    "bridges",
    "handoff",
    "library",
    "engine",
    "server",
    "cli",
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(AVATAR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_name(p): p for p in AVATAR.rglob("*.py")}


def _target(name: str) -> str | None:
    """The module an import of `name` loads (a name inside a module counts as the module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """Every avatar module `module` imports, wherever the import statement stands."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base.split(".")[0] != "avatar":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else _target(base))
        elif isinstance(node, ast.Import):
            found |= {_target(a.name) for a in node.names if a.name.split(".")[0] == "avatar"}
    return {m for m in found if m is not None and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def layer(module: str) -> int:
    """The module's layer, as an index into LAYERS; the public names are above them all."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return len(LAYERS)


def cycles() -> list[list[str]]:
    """The import cycles (strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
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

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read_from_the_source() -> None:
    """The reader sees lazy and type-only imports (a test that could not fail otherwise)."""
    assert "avatar.core.events" in GRAPH["avatar.engine.engine"]
    assert "avatar.engine.engine" in GRAPH["avatar"]  # inside `__getattr__`
    assert len(MODULES) > 100


def test_no_two_modules_import_each_other() -> None:
    found = cycles()
    described = [
        " -> ".join(c) + "\n    " + "; ".join(f"{a} -> {b}" for a in c for b in GRAPH[a] if b in c)
        for c in found
    ]
    assert not found, "import cycles:\n  " + "\n  ".join(described)


def test_imports_point_down_the_layers() -> None:
    upward = sorted(
        f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets if layer(b) > layer(a)
    )
    assert not upward, "imports up the layers:\n  " + "\n  ".join(upward)


# -- lazy imports ---------------------------------------------------------------------------------

#: Modules so cheap to import (well under a millisecond, stdlib only) that importing them
#: inside a function saves nothing: always imported at the top (docs/startup.md).
ALWAYS_EAGER = {
    "avatar.core.errors",
    "avatar.core.fileio",
    "avatar.core.ids",
    "avatar.core.times",
    "avatar.core.version",
}


def _top_level(module: str) -> set[str]:
    """The avatar modules `module` imports when it is imported (not in functions, not for
    type checking), with the packages they sit in."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base])
            if base.split(".")[0] == "avatar":
                found |= {_target(f"{base}.{a.name}") for a in node.names} | {_target(base)}
        elif isinstance(node, ast.Import):
            found |= {_target(a.name) for a in node.names if a.name.split(".")[0] == "avatar"}
    parts = module.split(".")
    found |= {".".join(parts[:i]) for i in range(1, len(parts))}
    return {m for m in found if m is not None and m != module}


@functools.cache
def _loaded_with(module: str) -> frozenset[str]:
    """Every avatar module loaded by importing `module` (its eager closure)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(_top_level(m))
    return frozenset(seen)


def _lazy_imports() -> list[tuple[str, int, str]]:
    found = []
    for module, path in MODULES.items():
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("avatar"):
                    for alias in node.names:
                        target = _target(f"{node.module}.{alias.name}")
                        if target is not None:
                            found.append((module, node.lineno, target))
    return found


def test_lazy_imports_only_where_they_save_something() -> None:
    """An import inside a function is for a module that is not loaded already (by the
    module's own top-level imports) and is not one of the always-cheap core modules."""
    lazy = _lazy_imports()
    assert len(lazy) > 20  # the reader sees them (the rule below could not fail otherwise)
    pointless = sorted(
        f"{module}:{line} imports {target} lazily"
        + (" (always cheap)" if target in ALWAYS_EAGER else " (loaded already)")
        for module, line, target in lazy
        if target in ALWAYS_EAGER or target in _loaded_with(module)
    )
    assert not pointless, "\n  ".join(["pointless lazy imports:", *pointless])
