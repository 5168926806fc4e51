"""The package's layering, read from its source with ast (nothing is imported): no import cycle
among tta modules at import time, no module using a sibling's private name, and the Rust
extension reached only through tta.common.bridge."""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.torch_independent

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


def _owner(name: str) -> str:
    """The tta module a dotted name lives in (``tta.aot.base.CompiledKernel`` -> ``tta.aot.base``)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


# Layer folders, lowest first: a module imports only modules of its rank or below.
LAYERS = [
    ("common", ["tta.errors", "tta._aliases", "tta.common"]),
    ("declare", ["tta.declare"]),
    ("kernels", ["tta.aot"]),
    ("runtime", ["tta.runtime"]),
    ("fx pass", ["tta.fx"]),
    ("verify", ["tta.verify"]),
    ("targets", ["tta.trt", "tta.inductor", "tta.backends"]),
    ("tools, benchmarks, examples", ["tta.tools", "tta.doctor", "tta.aot.bench_compile", "tta.examples"]),
]


def layer_of(module: str) -> int:
    best, rank = "", None
    for r, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > len(best):
                best, rank = p, r
    assert rank is not None, f"{module} is in no layer: add its folder to LAYERS"
    return rank


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for m, tree in TREES.items():
        out = set()
        for s in ast.walk(tree):
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                out.update(_owner(t) for t, _ in _imported(m, s))
        # a module may import its own package's __init__ (never the facade: it imports everything)
        graph[m] = {t for t in out if t in MODULES and t != m and t != "tta" and not m.startswith(t + ".")}
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
    assert {"tta.common.bridge", "tta.errors", "tta.fx.serialize"} <= graph["tta.fx.pipeline"]
    # imports inside functions count too
    assert "tta.fx.kernels" in graph["tta.fx.pipeline"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_among_tta_modules():
    assert cycles(import_graph()) == []


def test_each_layer_imports_only_layers_below():
    up = [
        f"{m} ({LAYERS[layer_of(m)][0]}) -> {t} ({LAYERS[layer_of(t)][0]})"
        for m, ts in import_graph().items()
        if m != "tta"
        for t in sorted(ts)
        if layer_of(t) > layer_of(m)
    ]
    assert up == [], "imports of a higher layer:\n" + "\n".join(up)


def test_no_package_module_is_named_like_a_public_name():
    import tta

    clash = [n for n in tta.__all__ if f"tta.{n}" in MODULES]
    assert clash == [], f"tta.<name> would be both a module and a public function: {clash}"


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
