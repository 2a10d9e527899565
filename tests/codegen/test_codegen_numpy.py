"""NumPy code generation: determinism, lint-cleanliness, injection safety, caching."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from dsl.driver.api import compile_layer
from dsl.frontend import compile_file, compile_text
from lowering.codegen.names import UnsafeName
from lowering.codegen.numpy.emit import render_numpy

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "fixtures" / "run"
LAYERS = sorted(RUN.glob("*.dsl")) + sorted((ROOT / "tests" / "fixtures" / "layers").glob("*.dsl"))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: p.stem)
def test_rendering_is_byte_identical(path):
    (g1,) = compile_file(path)
    (g2,) = compile_file(path)
    assert render_numpy(g1, "h", "v") == render_numpy(g2, "h", "v")


def test_generated_code_is_ruff_clean(tmp_path):
    """Every layer dslc compiles (fixtures and models), rendered and checked in one ruff run."""
    paths = sorted((ROOT / "tests" / "fixtures").rglob("*.dsl")) + sorted((ROOT / "models").rglob("*.dsl"))
    written = []
    for path in paths:
        for graph in compile_file(path):
            out = tmp_path / f"m{len(written)}_{path.stem}.py"
            out.write_text(render_numpy(graph, "h", "v"), encoding="utf-8")
            written.append(out)
    assert any("models" in p.parts for p in paths) and len(written) >= len(paths)
    ruff = Path(sys.executable).with_name("ruff")
    proc = subprocess.run(
        [str(ruff), "check", "--no-cache", "--output-format", "concise", "--config", str(ROOT / "pyproject.toml"),
         "--extend-ignore", "E741", *map(str, written)],  # E741: `l`, `I` are the authors' names (docs/naming.md)
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_names_are_checked_before_rendering():
    (graph,) = compile_text(
        "layer a(N = 4) { input x: f32[N, 4]\n output y: f32[N, 4]\n task t { y[:, :] = x[:, :] } }"
    )
    graph.tasks[0].name = "t'); import os; os.system('echo pwned'); ('"
    with pytest.raises(UnsafeName):
        render_numpy(graph, "h", "v")


def test_source_strings_never_become_code():
    """A guard's message is emitted (the host quotes it when it refuses a request): it must
    arrive as one string literal, equal to the source's, and add no statement."""
    payload = '"); import os; os.system("echo pwned") #'
    src = (
        "layer a(N = 4) {\n scalar n: i32\n"
        f' guard n <= N, "{payload.replace(chr(34), chr(92) + chr(34))}"\n'
        " input x: f32[N, 4]\n output y: f32[N, 4]\n task t { y[:, :] = x[:, :] } }"
    )
    (graph,) = compile_text(src)
    tree = ast.parse(render_numpy(graph, "h", "v"))
    assert payload in [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    imported = sorted(
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names
    )
    assert imported == ["Program", "TaskSpec", "TensorSpec"]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]


def test_cache_is_keyed_by_source_and_parameters(tmp_path):
    first = compile_layer(RUN / "splitk_ordered.dsl")
    mtime = first.module_path.stat().st_mtime_ns
    again = compile_layer(RUN / "splitk_ordered.dsl")
    assert again.module_path == first.module_path
    assert again.module_path.stat().st_mtime_ns == mtime  # not rewritten
    other = compile_layer(RUN / "splitk_ordered.dsl", {"SPLITS": 4})
    assert other.module_path != first.module_path
    assert other.program.tasks[0].blocks == 4


def test_generated_module_runs_and_matches_numpy():
    layer = compile_layer(RUN / "splitk_ordered.dsl")
    (inputs,) = layer.make_inputs(seed=3)
    result = layer.run(inputs)
    expected = inputs["x"] @ inputs["w"].T
    assert abs(result.outputs[0]["y"] - expected).max() < 1e-3
