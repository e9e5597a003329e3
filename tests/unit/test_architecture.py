"""The package's shape: no import cycle, lower layers never import higher ones, settings are
never written into the environment, the definitions load without pandas, and
docs/architecture.md lists the real assets."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "selene_dag"

# DESIGN "Layout": context < llm < notes, sessions, retrieval < defs, service < cli, api.
# A module may import modules of its own rank or lower, never higher.
RANKS = [
    (0, ("selene_dag.errors", "selene_dag.text", "selene_dag.paths", "selene_dag")),
    (1, ("selene_dag.context",)),
    (2, ("selene_dag.config", "selene_dag.store")),
    (3, ("selene_dag.llm",)),
    (4, ("selene_dag.notes", "selene_dag.sessions", "selene_dag.retrieval")),
    # last_verdict: Dagster's remembered verdict, read without loading Dagster.
    (5, ("selene_dag.defs", "selene_dag.definitions", "selene_dag.last_verdict")),
    (6, ("selene_dag.service",)),
    (7, ("selene_dag.cli", "selene_dag.api")),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Every selene_dag module imported anywhere in the file (function-level included:
    an import moved into a function to dodge a cycle is still a cycle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module pkg.mod when there is one.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target.startswith("selene_dag") and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def _rank(module: str) -> int:
    best = (-1, 0)
    for rank, prefixes in RANKS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), rank)
    return best[1]


def test_no_import_cycle() -> None:
    graph = _graph()
    # A package's __init__ re-exporting its submodules is not a cycle with them.
    edges = {
        name: {t for t in targets if not (name.startswith(t + ".") and _is_package(t))}
        for name, targets in graph.items()
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def _is_package(name: str) -> bool:
    return (ROOT / name.replace(".", "/") / "__init__.py").is_file()


def test_lower_layers_never_import_higher_ones() -> None:
    wrong = [
        f"{name} (layer {_rank(name)}) imports {target} (layer {_rank(target)})"
        for name, targets in _graph().items()
        for target in targets
        if _rank(target) > _rank(name) and not name.startswith(target + ".")
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_the_cycle_detector_sees_a_cycle(tmp_path: Path) -> None:
    """The walk above must be able to fail: two modules importing each other."""
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from selene_dag.b import g\n")
    modules = {"selene_dag.a": a, "selene_dag.b": tmp_path / "b.py"}
    assert _imports(a, "selene_dag.a", modules) == {"selene_dag.b"}


def test_the_package_never_writes_the_environment() -> None:
    writes = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next(
                    (t for t in targets if isinstance(t, ast.Subscript) and _is_environ(t.value)),
                    None,
                )
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                func = node.func
                if func.attr in ("update", "setdefault", "pop", "__setitem__") and _is_environ(
                    func.value
                ):
                    target = node
                if func.attr == "putenv":
                    target = node
            if target is not None:
                writes.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not writes, "os.environ written at " + ", ".join(writes)


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def test_the_definitions_load_without_pandas() -> None:
    """Loading the definitions (every code server and `dagster` command does) leaves pandas,
    about 0.5 s to import, to the steps that build frames."""
    code = "import sys, selene_dag.definitions; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("doc", ["docs/architecture.md"])
def test_architecture_doc_lists_every_asset_of_the_definitions(doc: str) -> None:
    import dagster as dg

    from selene_dag.definitions import defs

    text = (ROOT / doc).read_text(encoding="utf-8")
    table = text[text.index("## Assets") :]
    table = table[: table.index("\n## ", 5)] if "\n## " in table[5:] else table
    documented = {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(
            r"^\| `([a-z_]+)` \| `([a-z]+)` \| `(selene_dag\.defs\.[a-z_]+)` \|", table, re.M
        )
    }
    actual: dict[str, tuple[str, str]] = {}
    for assets_def in defs.assets or []:
        if isinstance(assets_def, dg.AssetsDefinition):
            fn = assets_def.op.compute_fn
            module = getattr(fn, "decorated_fn", fn).__module__
            keys = list(assets_def.keys)
        else:  # an observable source asset
            module = assets_def.observe_fn.__module__
            keys = [assets_def.key]
        graph = defs.resolve_asset_graph()
        for key in keys:
            actual[key.to_user_string()] = (graph.get(key).group_name, module)
    assert documented == actual
