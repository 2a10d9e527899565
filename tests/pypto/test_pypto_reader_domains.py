"""Admissible values the PyPTO reader takes from a model file, at their exact ends: Python's
`range(a, b)` stops before `b`, `lo < N < hi` excludes both ends, `<=` includes them. Each
form the reader knows is tested where it occurs: a module `assert` on a constant, an argparse
`choices=`, and a guard of `build_tensor_specs` on a runtime scalar."""

from __future__ import annotations

import textwrap

import pytest

from lowering.pypto_reader import read_pypto

HEAD = "import pypto.language as pl\n"

KERNEL = """
@pl.jit
def entry(x: pl.Tensor[[T, 64], pl.FP32], y: pl.Out[pl.Tensor[[T, 64], pl.FP32]]):
    with pl.spmd(T // 16, name_hint="copy"):
        b = pl.tile.get_block_idx()
        y = pl.assemble(y, x[b * 16 : (b + 1) * 16, :], [b * 16, 0])
    return y
"""


def _graph(tmp_path, text: str):
    path = tmp_path / "model.py"
    path.write_text(HEAD + textwrap.dedent(text), encoding="utf-8")
    result = read_pypto(path)
    assert [d for d in result.diagnostics if d.code != "P001"] == []
    (graph,) = result.graphs
    return graph


@pytest.mark.parametrize(
    ("constraint", "values"),
    [
        ("assert T in range(128, 1024, 128)", [128, 256, 384, 512, 640, 768, 896]),
        ("assert T in range(128, 1025, 128)", [128, 256, 384, 512, 640, 768, 896, 1024]),
        ("assert T in range(16, 80, 32)", [16, 48]),
        ("assert T in range(64)", list(range(64))),
        ("SIZES = range(16, 64, 16)\nassert T in SIZES", [16, 32, 48]),  # a range object, not a call
        ("assert 16 < T < 20", [17, 18, 19]),
        ("assert 16 <= T < 20", [16, 17, 18, 19]),
        ("assert 16 < T <= 20", [17, 18, 19, 20]),
        ("assert 16 <= T <= 20", [16, 17, 18, 19, 20]),
    ],
)
def test_a_module_assert_gives_the_constants_exact_domain(tmp_path, constraint, values):
    g = _graph(tmp_path, f"T = {values[-1]}\n{constraint}\n{KERNEL}")
    assert list(g.params["T"].domain) == values


@pytest.mark.parametrize(
    ("choices", "values"),
    [("range(16, 64, 16)", [16, 32, 48]), ("range(16, 65, 16)", [16, 32, 48, 64])],
)
def test_argparse_choices_range_stops_before_its_stop(tmp_path, choices, values):
    main = (
        'if __name__ == "__main__":\n    import argparse\n\n    parser = argparse.ArgumentParser()\n'
        f'    parser.add_argument("--t", type=int, default=T, choices={choices})\n'
        "    args = parser.parse_args()\n    T = args.t\n"
    )
    assert list(_graph(tmp_path, f"T = 16\n{KERNEL}\n{main}").params["T"].domain) == values


SPECS = """
T = 64
{kernel}

def build_tensor_specs(num_tokens=1):
    import torch
    from golden import TensorSpec

    {guard}
        raise ValueError("num_tokens out of range")
    return [TensorSpec("x", [T, 64], torch.float32), TensorSpec("y", [T, 64], torch.float32, is_output=True)]
"""

USES_NUM_TOKENS = """
@pl.jit
def entry(x: pl.Tensor[[T, 64], pl.FP32], y: pl.Out[pl.Tensor[[T, 64], pl.FP32]], num_tokens: pl.Scalar[pl.INT32]):
    with pl.spmd(T // 16, name_hint="copy"):
        b = pl.tile.get_block_idx()
        if b * 16 < num_tokens:
            y = pl.assemble(y, x[b * 16 : (b + 1) * 16, :], [b * 16, 0])
    return y
"""


@pytest.mark.parametrize(
    ("guard", "values"),
    [
        ("if not 0 < num_tokens < 8:", list(range(1, 8))),
        ("if not 0 <= num_tokens < 8:", list(range(0, 8))),
        ("if not 0 < num_tokens <= 8:", list(range(1, 9))),
        ("if num_tokens not in range(1, 8):", list(range(1, 8))),
        ("if num_tokens not in range(2, 9, 3):", [2, 5, 8]),
    ],
)
def test_a_build_tensor_specs_guard_gives_the_scalars_exact_domain(tmp_path, guard, values):
    g = _graph(tmp_path, SPECS.format(kernel=USES_NUM_TOKENS, guard=guard))
    assert list(g.scalars["num_tokens"].domain) == values
