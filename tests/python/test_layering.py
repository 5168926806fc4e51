"""The package's layering, read from its source with ast (nothing is imported): no import cycle
among tta modules at import time, no module using a sibling's private name, and the Rust
extension reached only through tta.common.bridge."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2] / "python"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted((ROOT / "tta").rglob("*.py"))}
TREES = {m: ast.parse(p.read_text(), str(p)) for m, p in MODULES.items()}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``import from`` names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str | None]]:
    """(tta module, name taken from it or None) for each tta module an import statement reads."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names if a.name.split(".")[0] == "tta"]
    target = _absolute(module, node)
    if target.split(".")[0] != "tta":
        return []
    return [(f"{target}.{a.name}", None) if f"{target}.{a.name}" in MODULES else (target, a.name) for a in node.names]


def _import_time(tree: ast.Module):
    """Statements run when the module is imported: the body and the blocks in it (if, try,
    with), never function bodies or ``if TYPE_CHECKING:``."""
    todo = list(tree.body)
    while todo:
        s = todo.pop()
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(s, ast.If) and "TYPE_CHECKING" in ast.unparse(s.test):
            todo.extend(s.orelse)
            continue
        yield s
        for block in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(s, block, None) or [])


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for m, tree in TREES.items():
        out = set()
        for s in _import_time(tree):
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                out.update(t for t, _ in _imported(m, s))
        graph[m] = {t for t in out if t in MODULES and t != m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while comp[-1:] != [v]:
                comp.append(stack.pop())
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checks_see_the_package():
    graph = import_graph()
    assert len(MODULES) > 50 and sum(map(len, graph.values())) > 100
    assert {"tta.common.bridge", "tta.errors", "tta.fx.serialize"} <= graph["tta.rewrite"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_among_tta_modules():
    assert cycles(import_graph()) == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_uses_a_siblings_private_name(module):
    tree = TREES[module]
    aliases: dict[str, str] = {}  # local name -> tta module, from every import in the file
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for (target, name), alias in zip(_imported(module, node), node.names):
                if target == "tta._core" or (name == "_core" and target == "tta"):
                    if module != "tta.common.bridge":
                        bad.append(f"line {node.lineno}: imports the extension (only tta.common.bridge calls it)")
                elif name is not None and _private(name):
                    bad.append(f"line {node.lineno}: imports {target}.{name}")
                elif name is None:
                    aliases[alias.asname or alias.name.split(".")[0]] = target
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
            target = aliases.get(node.value.id)
            if target is not None and target != module and target != "tta":
                bad.append(f"line {node.lineno}: uses {target}.{node.attr}")
    assert not bad, f"{module}: " + "; ".join(bad)
