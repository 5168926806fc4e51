"""``tta.explain`` and ``tta explain``: the region table (every column), the SVG picture
(rendered by Graphviz, parsed back), the command line on a saved graph without torch, and the
clear error when Graphviz is missing."""

import importlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import explain_model
import pytest

import tta
from tta.errors import TTAError
from tta.tools import cli

explain_mod = importlib.import_module("tta.tools.explain")
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(os.path.dirname(tta.__file__))
SVG = "{http://www.w3.org/2000/svg}"
# scripts/test.sh sets TTA_REQUIRE_TOOLS: there a missing dot fails the SVG tests instead of skipping them.
_NO_DOT = shutil.which("dot") is None and not os.environ.get("TTA_REQUIRE_TOOLS")
needs_dot = pytest.mark.skipif(_NO_DOT, reason="Graphviz's dot is not installed (scripts/setup.sh installs it)")


def _with_line(impl: str) -> str:
    """``explain_model.py:N``, N the line of the fixture's ``with tta.lower_as(impl)`` (a
    region's source), found in the file so that reformatting it does not break the tests."""
    with open(explain_model.__file__) as f:
        n = next(i for i, line in enumerate(f, 1) if f"with tta.lower_as({impl})" in line)
    return f"explain_model.py:{n}"


@pytest.fixture(scope="module")
def program():
    return explain_model.exported()


@pytest.fixture(scope="module")
def text(program):
    return tta.explain(program)


def _rows(text: str) -> dict[str, dict[str, str]]:
    """Region id -> column -> the cell's lines joined by newlines."""
    lines = text.splitlines()
    header = [c.strip() for c in lines[1].split("|")]
    assert header == list(explain_mod.COLUMNS), header
    rows, current = {}, None
    for line in lines[3:]:
        if set(line) <= set("-+"):
            current = None
            continue
        cells = [c.strip() for c in line.split("|")]
        cells += [""] * (len(header) - len(cells))
        if current is None:
            current = {h: [] for h in header}
            rows[cells[0]] = current
        for h, c in zip(header, cells):
            if c:
                current[h].append(c)
    return {k: {h: "\n".join(v) for h, v in r.items()} for k, r in rows.items()}


def test_table_has_every_column_for_outlined_and_refused_regions(text):
    assert text.startswith("tta explain: 2 region(s), 1 outlined, 1 refused\n")
    rows = _rows(text)
    refused = next(r for k, r in rows.items() if k.startswith("rmsnorm:"))
    outlined = next(r for k, r in rows.items() if k.startswith("fused_add_relu:"))

    assert outlined["region"].endswith("(lower_as)")
    assert outlined["impl"].startswith("fused_add_relu@")
    assert outlined["op"].startswith("tta::fused_add_relu_") and "node tta_fused_add_relu" in outlined["op"]
    # Inputs and outputs with dtypes and the symbolic batch dim.
    assert outlined["inputs"].splitlines()[0].startswith("addmm: float32[s") and outlined["inputs"].splitlines()[0].endswith(", 64]")
    assert outlined["inputs"].splitlines()[1].startswith("y: float32[s")
    assert outlined["outputs"].startswith("relu: float32[s")
    assert outlined["source"].endswith(_with_line("fused_add_relu"))
    assert outlined["status"] == "outlined"
    assert outlined["backend"].splitlines() == ["triton launch_add_relu BLOCK=1024", "triton launch_add_relu BLOCK=2048 num_warps=8"]

    assert refused["op"] == "-"
    assert refused["source"].endswith(_with_line("rmsnorm"))
    status = refused["status"].replace("\n", " ")
    # fx numbers nodes differently across torch versions: `mul_1`, `mul_8`, ...
    assert re.fullmatch(r"REFUSED: meta_impl output 0 has shape \[s\d+\] but region output `mul_\d+` has shape \[s\d+, 64\]", status), (
        status
    )
    assert refused["inputs"].splitlines() == [p for p in refused["inputs"].splitlines() if ": float32[" in p]
    assert refused["backend"] == "triton launch_rmsnorm BLOCK=1024 eps=1e-06"


def test_tactic_ids_are_the_ones_the_tensorrt_plugin_registers(text):
    from tta.trt import tactics  # needs torch, not torch_tensorrt

    spec = explain_model.fused_add_relu.kernels[0]
    want = tactics.tactic_ids([(spec.backend, spec.identity, c) for c in spec.config_dicts()])
    row = next(r for k, r in _rows(text).items() if k.startswith("fused_add_relu:"))
    assert [int(t) for t in row["tactics"].splitlines()] == want


def test_explain_leaves_the_program_unchanged(program):
    before = program.graph_module.code
    tta.explain(program)
    assert program.graph_module.code == before
    assert not any("tta." in str(n.target) for n in program.graph.nodes)


def _svg(path):
    root = ET.parse(path).getroot()
    groups = {}
    for g in root.iter(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        texts = " ".join(t.text or "" for t in g.iter(f"{SVG}text"))
        groups[(g.get("class"), title.text if title is not None else None)] = texts
    return root, groups


@needs_dot
def test_svg_has_a_cluster_per_region_and_the_plugin_node(program, tmp_path):
    path = tmp_path / "g.svg"
    text = tta.explain(program, svg=path)
    assert text == tta.explain(program)  # the picture does not change the report
    root, groups = _svg(path)
    assert root.tag == f"{SVG}svg"
    clusters = {t for (cls, t) in groups if cls == "cluster"}
    assert clusters == {"cluster_r0", "cluster_r1"}
    nodes = {t: txt for (cls, t), txt in groups.items() if cls == "node"}
    assert nodes["p1"].startswith("tta::fused_add_relu_") and "plugin node tta_fused_add_relu" in nodes["p1"]
    assert "p0" not in nodes  # the refused region has no plugin node
    assert "REFUSED: meta_impl output 0" in nodes["r0"]
    assert "outlined" in nodes["r1"] and _with_line("fused_add_relu") in nodes["r1"]
    # Every op of the graph is drawn (nothing to collapse in so small a graph).
    for n in program.graph.nodes:
        if "tta_marker" in str(n.target):
            continue  # lower_as's region markers: tta.rewrite takes them out before the pass
        assert n.name in nodes.values() or any(v.split()[0] == n.name for v in nodes.values()), n.name
    edges = {t for (cls, t) in groups if cls == "edge"}
    assert "p1&#45;&gt;r1" in edges or "p1->r1" in edges


def _run_cli(*argv):
    code = (
        "import sys\nfrom tta import cli\nrc = cli.main(sys.argv[1:])\n"
        "print('torch imported:', 'torch' in sys.modules, file=sys.stderr)\nsys.exit(rc)"
    )
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=120)


@needs_dot
def test_cli_on_a_saved_graph_prints_the_same_table_without_torch(program, text, tmp_path):
    path = tmp_path / "g.json"
    tta.save_graph(program, path)
    out = _run_cli("explain", str(path), "--svg", str(tmp_path / "g.svg"))
    assert out.returncode == 0, out.stderr
    assert "torch imported: False" in out.stderr
    assert out.stdout == text + f"wrote {tmp_path / 'g.svg'}\n"
    _, groups = _svg(tmp_path / "g.svg")
    assert {t for (cls, t) in groups if cls == "cluster"} == {"cluster_r0", "cluster_r1"}


@pytest.mark.torch_independent
def test_cli_on_a_graph_file_without_kernel_specs_says_so(capsys):
    fixture = os.path.join(HERE, "..", "fixtures", "residual_add_relu.json")
    assert cli.main(["explain", fixture]) == 0
    row = next(iter(_rows(capsys.readouterr().out).values()))
    assert row["status"] == "outlined" and row["backend"] == "(not recorded)"


def test_missing_graphviz_is_a_clear_error(program, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` here
    with pytest.raises(TTAError, match=r"Graphviz's `dot` was not found.*apt-get install graphviz"):
        tta.explain(program, svg=tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()
    fixture = os.path.join(HERE, "..", "fixtures", "residual_add_relu.json")
    assert cli.main(["explain", fixture, "--svg", str(tmp_path / "g.svg")]) == 2


@pytest.mark.torch_independent
def test_big_graphs_are_capped_and_the_title_says_so(tmp_path):
    fixture = os.path.join(HERE, "..", "fixtures", "loop12.json")
    path = tmp_path / "g.svg"
    if _NO_DOT:
        pytest.skip("Graphviz's dot is not installed")
    assert cli.main(["explain", fixture, "--svg", str(path), "--max-nodes", "20"]) == 0
    root, groups = _svg(path)
    title = " ".join(t.text or "" for t in root.find(f"{SVG}g").findall(f"{SVG}text"))
    assert "only the regions and their neighbours are drawn" in title
    assert len([1 for (cls, _) in groups if cls == "cluster"]) == 12


@pytest.mark.torch_independent
def test_docs_example_is_a_picture_of_the_fixture_model():
    path = os.path.join(HERE, "..", "..", "docs", "explain-example.svg")
    _, groups = _svg(path)
    assert {t for (cls, t) in groups if cls == "cluster"} == {"cluster_r0", "cluster_r1"}
    nodes = {t: txt for (cls, t), txt in groups.items() if cls == "node"}
    assert "REFUSED: meta_impl output 0" in nodes["r0"] and nodes["p1"].startswith("tta::fused_add_relu_")


@pytest.mark.torch_independent
def test_a_cap_below_one_node_is_refused(capsys):
    fixture = os.path.join(HERE, "..", "fixtures", "residual_add_relu.json")
    assert cli.main(["explain", fixture, "--max-nodes", "-3"]) == 2
    assert capsys.readouterr().err == "tta explain: error: max_nodes must be a positive number of nodes, got -3\n"
