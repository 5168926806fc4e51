"""Bad input through the command line: ``tta report`` prints one line and exits 2, never a
traceback, and never imports torch; ``tta.save_graph`` writes the file it reads."""

import json
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

import tta
from tta.tools import cli

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "nonconvex.json")
PYTHON_DIR = os.path.dirname(os.path.dirname(tta.__file__))


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    # A fresh interpreter, as a user's shell would start it; print whether torch got imported.
    code = (
        "import sys\nfrom tta import cli\nrc = cli.main(sys.argv[1:])\n"
        "print('torch imported:', 'torch' in sys.modules, file=sys.stderr)\nsys.exit(rc)"
    )
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.torch_independent
def test_report_runs_without_importing_torch():
    out = run_cli("report", FIXTURE)
    assert out.returncode == 0, out.stderr
    assert "torch imported: False" in out.stderr
    assert "region " in out.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"format": "tta-graph", "nod', "not valid JSON: it ends early (is the file truncated?)"),
        ('{"format": "tta-graph",', "not valid JSON: it ends early (is the file truncated?)"),
        ("garbage\n", "not valid JSON: Expecting value at line 1 column 1"),
        ("[1, 2]", "the graph file must be a JSON object, got a list"),
        ('{"graph": [1]}', '"graph" must be a JSON object, got a list'),
        ('{"graph": {}, "impls": 3}', '"impls" must be a JSON object, got a number'),
        ("\xff\xfe", "not a graph JSON file (not UTF-8 text)"),
        ('{"format": "tta-graph", "version": 99, "nodes": []}', 'expected format "tta-graph" version 1, got "tta-graph" version 99'),
    ],
)
@pytest.mark.torch_independent
def test_report_on_bad_files_prints_one_line(tmp_path, content, message):
    path = tmp_path / "g.json"
    path.write_bytes(content.encode("latin-1"))
    out = run_cli("report", str(path))
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if not ln.startswith("torch imported")]
    assert lines == [f"tta report: error: {path}: {message}"], out.stderr
    assert out.stdout == ""


@pytest.mark.torch_independent
def test_report_on_missing_files_and_a_broken_impls_file(tmp_path, capsys):
    missing = str(tmp_path / "nope.json")
    assert cli.main(["report", missing]) == 2
    assert capsys.readouterr().err == f"tta report: error: {missing}: no such file\n"
    assert cli.main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"tta report: error: {tmp_path}: is a directory, not a graph JSON file\n"
    impls = tmp_path / "impls.json"
    impls.write_text('{"a": ')
    assert cli.main(["report", FIXTURE, "--impls", str(impls)]) == 2
    assert capsys.readouterr().err == f"tta report: error: {impls}: not valid JSON: it ends early (is the file truncated?)\n"
    impls.write_text('["a"]')
    assert cli.main(["report", FIXTURE, "--impls", str(impls)]) == 2
    assert capsys.readouterr().err == f"tta report: error: {impls}: the impls file must be a JSON object, got a list\n"
    impls.write_text('{"a": {"name": 3}}')
    assert cli.main(["report", FIXTURE, "--impls", str(impls)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tta report: error: {FIXTURE}: ") and err.count("\n") == 1, err


@pytest.mark.torch_independent
def test_report_names_the_node_and_source_of_a_broken_graph(tmp_path, capsys):
    doc = json.load(open(FIXTURE))
    graph = doc["graph"]
    victim = next(n for n in graph["nodes"] if n["op"] == "call_function")
    victim["args"] = [{"ref": "ghost"}]
    victim["source"] = "model.py:12"
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tta report: error: {path}: node `{victim['name']}` (model.py:12): ") and "`ghost`" in err, err


class Marked(nn.Module):
    def forward(self, a, b):
        with tta.lower_as(tta.custom_plugin(name="add_relu_saved")):
            return torch.relu(a + b)


def test_save_graph_writes_what_report_reads(tmp_path):
    ep = torch.export.export(Marked(), (torch.randn(4), torch.randn(4)))
    path = tmp_path / "graph.json"
    tta.save_graph(ep, path)
    out = run_cli("report", str(path))
    assert out.returncode == 0, out.stderr
    want = tta.rewrite(ep).report_text
    assert out.stdout.startswith(want), (out.stdout, want)
    # Selectors travel with the graph, so the report is the one rewrite prints.
    sel = tta.lower_pattern(lambda a, b: torch.relu(a + b), tta.custom_plugin(name="ar"), (torch.randn(4), torch.randn(4)), name="ar")
    ep = torch.export.export(nn.Sequential(nn.ReLU()), (torch.randn(4),))  # no occurrence
    tta.save_graph(ep, path, selectors=[sel])
    out = run_cli("report", str(path))
    assert out.returncode == 0, out.stderr
    assert "pattern ar occurs nowhere; no node in the graph is `aten.relu.default`" not in out.stdout
    assert "pattern ar occurs nowhere; " in out.stdout


def test_graph_file_command_line(tmp_path):
    ep = torch.export.export(Marked(), (torch.randn(4), torch.randn(4)))
    pt2 = tmp_path / "m.pt2"
    torch.export.save(ep, pt2)
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    out = subprocess.run(
        [sys.executable, "-m", "tta.tools.graph_file", str(pt2), str(tmp_path / "g.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert json.load(open(tmp_path / "g.json"))["graph"]["format"] == "tta-graph"
    for source, message in [
        ("no_colon", "'no_colon' is neither a .pt2 file nor module:attr"),
        ("json:nothing_here", "module 'json' has no attribute 'nothing_here'"),
        ("json:__name__", "tta.save_graph takes an ExportedProgram or a GraphModule, got str"),
    ]:
        out = subprocess.run(
            [sys.executable, "-m", "tta.tools.graph_file", source, str(tmp_path / "x.json")],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert out.returncode == 2 and out.stderr == f"python -m tta.tools.graph_file: error: {message}\n", out.stderr
