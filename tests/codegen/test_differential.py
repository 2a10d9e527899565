"""Differential test (issue 14): every layer of the repository that declares a golden runs on the
simulator through both name-sensitive targets and must match the golden both times:

- **NumPy**: the kernels ``dslc run`` generates (``dsl.load``);
- **PyPTO**: the emitted PyPTO module, read back by the PyPTO reader and run as NumPy kernels
  -- so what is simulated is what the PyPTO module says. Two source names sharing one PyPTO
  name (one buffer), arguments bound to the wrong parameters or a constant written as another
  all show up as a wrong output here.

Layers are discovered when the test runs (fixtures and models), at the reduced sizes below
where their real configuration is too large for the suite.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dsl
from lowering.codegen.numpy.emit import render_numpy
from lowering.codegen.pypto.emit import emitted_names, render_pypto
from lowering.codegen.pypto.text import py_name
from lowering.pypto_reader import read_pypto
from runtime.loader import load_program
from runtime.simulator import simulate

ROOT = Path(__file__).resolve().parents[2]
HC_PRE = {"T": 16, "HC_DIM": 1024, "LINEAR_K_CHUNK": 64, "RMS_K_CHUNK": 32}
MOE = {"EP": 2, "T": 16, "D": 256, "I": 128, "VOCAB": 512}
# Reduced sizes (the model tests use the same) and run options, by path below the repository.
CONFIGS: dict[str, tuple[dict[str, int], dict]] = {
    "models/deepseek_v4_flash/hc_pre.dsl": (HC_PRE, {}),
    "models/deepseek_v4_flash/hc_pre_fused.dsl": (HC_PRE, {"cores": "a2a3"}),
    "models/deepseek_v4_flash/hc_post.dsl": ({"T": 16, "HC_DIM": 1024}, {}),
    "models/deepseek_v4_flash/moe.dsl": (MOE, {}),
    "tests/fixtures/seed/moe_pre.dsl": (MOE, {}),
    "models/deepseek_v4_flash/prefill_indexer.dsl": (
        {"T": 128, "D": 256, "H": 8, "Q_LORA": 128, "IDX_TOPK": 64, "MAX_POS": 1024},
        {},
    ),
    "models/deepseek_v4_flash/prefill_csa.dsl": (
        {
            "T": 128,
            "D": 256,
            "H": 8,
            "HD": 128,
            "WIN": 16,
            "IDX_TOPK": 64,
            "O_GROUPS": 2,
            "O_LORA": 64,
            "MAX_POS": 1024,
            "ORI_BLOCK_NUM": 32,
            "CMP_BLOCK_NUM": 16,
        },
        {},
    ),  # fmt: skip
}
# What the PyPTO leg cannot run yet, and why (strict: the test says when it starts to work).
PYPTO_GAPS = {
    "models/deepseek_v4_flash/prefill_csa.dsl": "the reader reads the emitted pl.gather_row loop as an "
    "opaque gather_row op, which the NumPy target has no kernel for",
}


def layers_with_goldens() -> list[str]:
    found = []
    for base in ("tests/fixtures", "models"):
        for path in sorted((ROOT / base).rglob("*.dsl")):
            if re.search(r'^\s*golden\s+"', path.read_text(encoding="utf-8"), re.M):
                found.append(path.relative_to(ROOT).as_posix())
    return found


CASES = layers_with_goldens()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def load(path: str):
    """The layer at its reduced sizes, and its inputs: a layer that does not compile or is too
    large to simulate (E108) fails the test -- nothing is skipped (issue 15)."""
    params, options = CONFIGS.get(path, ({}, {}))
    layer = dsl.load(ROOT / path, **params)
    return layer, layer.make_inputs(0), options


def test_the_differential_covers_the_fixtures_and_the_models():
    assert "tests/fixtures/run/splitk_reduce.dsl" in CASES
    assert any(c.startswith("models/") for c in CASES)


@pytest.mark.parametrize("path", CASES)
def test_numpy_kernels_match_the_golden(cache, path):
    layer, inputs, options = load(path)
    validation = layer.validate(inputs, layer.run(inputs, **options))
    assert validation.passed, [(c.name, c.rank, c.message) for c in validation.checks if not c.passed]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.xfail(reason=PYPTO_GAPS[p], strict=True)) if p in PYPTO_GAPS else p
        for p in CASES
    ],
)
def test_the_pypto_module_read_back_matches_the_golden(cache, tmp_path, path):
    layer, inputs, options = load(path)
    graph = layer.graph
    module = tmp_path / f"{py_name(graph.name)}.py"
    module.write_text(render_pypto(graph, "h", "v"))
    result = read_pypto(module)
    assert [d for d in result.diagnostics if d.severity.value == "error"] == []
    (back,) = [g for g in result.graphs if g.name == py_name(graph.name)]
    stem = re.sub(r"\W", "_", path)  # a module name of its own: modules are cached by name
    kernels = tmp_path / f"pypto_back_{stem}.py"
    kernels.write_text(render_numpy(back, "h", "v"))
    names, _, _ = emitted_names(graph)
    renamed = {name: names(name) for name in [*graph.tensors, *graph.scalars]}
    per_rank, scalars = layer.split_scalars(inputs)
    ran = simulate(
        load_program(kernels),
        [{renamed[k]: v for k, v in per.items()} for per in per_rank],
        ranks=layer.ranks,
        scalars={renamed[k]: v for k, v in scalars.items()},
        **options,
    )
    back_to_source = {v: k for k, v in renamed.items()}
    ran.outputs = [{back_to_source[k]: v for k, v in out.items()} for out in ran.outputs]
    validation = layer.validate(inputs, ran)
    assert validation.passed, [(c.name, c.rank, c.message) for c in validation.checks if not c.passed]
