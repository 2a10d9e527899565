"""What the AscendC target refuses, and where: located A7xx diagnostics, never wrong code.

Covers the lint that runs before emission (A711 buffers that do not fit, A712 unaligned
views, A713 transfer limits, A721 barrier grids) and the CLI: exit 2 with the diagnostic,
nothing written.
"""

from __future__ import annotations

import pytest
from ascutil import refusal

from dsl.driver.cli import main

CASES = {
    "a tile both cores of a mix task write": (
        """layer m(T = 16) {
  input x: f32[T, 16]
  input w: f32[16, 16]
  output y: f32[T, 16]
  task t on mix {
    let a = zeros(f32, [T, 16])
    a = matmul_acc(a, x[:, :], w[:, :], b_trans)
    a = a * 0.5
    a = matmul_acc(a, x[:, :], w[:, :], b_trans)
    y[:, :] = a
  }
}""",
        ("A703", 6, 5, "a is written by both the cube and the vector core of mix task t"),
    ),
    "a mix branch on a vector value": (
        """layer m(T = 16) {
  input x: f32[T, 16]
  input w: f32[16, 16]
  output y: f32[T, 16]
  output z: f32[T, 16]
  task t on mix {
    let m = row_max(x[:, :])
    if read(m[0, 0]) > 0.0 {
      y[:, :] = matmul(x[:, :], w[:, :], b_trans)
      z[:, :] = x[:, :]
    }
  }
}""",
        ("A703", 8, 5, "a branch condition of mix task t needs a value only one core computes"),
    ),
    "UB overflow on the vector side of a mix task": (
        """layer u(T = 256) {
  input x: f32[T, 512]
  input w: f32[16, 512]
  output y: f32[T, 512]
  output p: f32[16, 16]
  task t on mix {
    p[:, :] = matmul(x[0 : 16, :], w[:, :], b_trans)
    y[:, :] = exp(x[:, :])
  }
}""",
        ("A711", 6, 3, "task t needs 1048576 B of UB, more than the 196608 B"),
    ),
    "mix barrier grid larger than the clusters": (
        """layer s(N = 32) {
  task t spmd(N) on mix { barrier }
}""",
        ("A721", 2, 3, "holds a barrier over 32 blocks, more than the 24 clusters"),
    ),
    "bf16 arithmetic": (
        """layer b(T = 16) {
  input x: bf16[T, 16]
  output y: bf16[T, 16]
  task t on aiv {
    y[:, :] = x[:, :] + x[:, :]
  }
}""",
        ("A702", 5, 5, "'add' on bf16 tiles"),
    ),
    "an op without a lowering": (
        """layer c(T = 16) {
  input x: f32[T, 16]
  output y: f32[16, T]
  task t on aiv {
    y[:, :] = transpose(x[:, :])
  }
}""",
        ("A701", 5, 5, "transpose of a tile with more than one row and column"),
    ),
    **{
        f"tile {what}": (
            f"""layer c(T = 16) {{
  input x: {dtype}[T, 64]
  input y: {dtype}[T, 64]
  scalar n: i32
  output z: {dtype}[T, 64]
  task t on aiv {{
    let a = x[:, :]
    z[:, :] = {expr}
  }}
}}""",
            ("A70" + code[-1], 8, 5, message),
        )
        for what, dtype, expr, code, message in (
            ("// by 3", "i32", "a / 3", "A701", "'//' of an i32 tile by 3: only a constant power of two"),
            ("// by inf", "i32", "a / 1e999", "A701", "'//' of an i32 tile by "),
            ("i32 < inf", "i32", "select(a < 1e999, a, a)", "A702", "'lt' of an i32 tile with "),
            (
                "% by a runtime scalar",
                "i32",
                "a % n",
                "A701",
                "'%' of an i32 tile by s_n: only a constant power",
            ),
            ("% on f32", "f32", "a % 2.0", "A701", "'%' on f32 tiles: only integer tiles"),
            ("// by a tile", "i32", "a / y[:, :]", "A701", "'//' with a tile divisor"),
            ("i32 < i32", "i32", "select(a < y[:, :], a, a)", "A702", "'lt' of two i32 tiles"),
            ("i32 < runtime", "i32", "select(a < n, a, a)", "A702", "'lt' of an i32 tile with s_n"),
            (
                "i32 < 2^24",
                "i32",
                "select(a < 16777216, a, a)",
                "A702",
                "against a constant integer below 2^24",
            ),
            ("bool cast", "f32", "cast(a > 0.0, f32)", "A702", "no cast from bool to f32"),
            (
                "and of a scalar",
                "f32",
                "select((a > 0.0) and (n > 0), a, a)",
                "A701",
                "'and' of a bool tile and a",
            ),
            (
                "step 4 view",
                "f32",
                "zeros(f32, [T, 64]) + col_expand_mul(a, a[0 : 1, 0 : 64 : 4])",
                "A701",
                "a column-strided view of a f32 tile with step 4",
            ),
        )  # fmt: skip
    },
    "a strided view two lanes into a block": (
        """layer c(T = 16) {
  input x: f32[T, 64]
  output z: f32[T, 31]
  task t on aiv {
    let a = exp(x[:, :])
    z[:, :] = a[:, 2 : 64 : 2]
  }
}""",
        ("A701", 6, 5, "a column-strided view starting 2 lanes into a 32-byte block"),
    ),
    "a mask of another row layout": (
        """layer c(T = 4) {
  input h: f16[T, 8]
  input x: f32[T, 8]
  output z: f32[T, 8]
  task t on aiv {
    z[:, :] = select(h[:, :] > 0.0, x[:, :], 0.0)
  }
}""",
        ("A701", 6, 5, "select() of a f32 tile with a mask laid out for rows of 16 lanes"),
    ),
    "masks of two row layouts": (
        """layer c(T = 4) {
  input h: f16[T, 8]
  input x: f32[T, 8]
  output z: f32[T, 8]
  task t on aiv {
    z[:, :] = select((h[:, :] > 0.0) and (x[:, :] > 0.0), x[:, :], 0.0)
  }
}""",
        ("A701", 6, 5, "'and' of masks laid out for different row strides (16 and 8 lanes)"),
    ),
    "select of i8": (
        """layer c(T = 16) {
  input x: i8[T, 64]
  input f: f32[T, 64]
  output z: i8[T, 64]
  task t on aiv {
    z[:, :] = select(f[:, :] > 0.0, x[:, :], x[:, :])
  }
}""",
        ("A702", 6, 5, "select() of i8 tiles: Select moves 16- and 32-bit lanes"),
    ),
    "reassigned mask": (
        """layer c(T = 16) {
  input f: f32[T, 64]
  output z: f32[T, 64]
  task t on aiv {
    let m = f[:, :] > 0.0
    m = f[:, :] > 1.0
    z[:, :] = select(m, f[:, :], 0.0)
  }
}""",
        ("A701", 5, 5, "reassigning the bool tile m"),
    ),
    "strided store of i8": (
        """layer c(T = 16) {
  input x: f32[T, 64]
  output z: i8[T, 128]
  task t on aiv {
    z[:, 0 : 128 : 2] = cast(x[:, :], i8)
  }
}""",
        ("A701", 5, 5, "a column-strided store of i8"),
    ),
    "UB overflow": (
        """layer u(T = 256) {
  input x: f32[T, 512]
  output y: f32[T, 512]
  task t on aiv {
    y[:, :] = exp(x[:, :])
  }
}""",
        ("A711", 4, 3, "task t needs 1048576 B of UB, more than the 196608 B"),
    ),
    "L0C overflow": (
        """layer l(T = 256) {
  input x: f32[T, 64]
  input w: f32[256, 64]
  output y: f32[T, 256]
  task t on aic {
    y[:, :] = matmul(x[:, :], w[:, :], b_trans)
  }
}""",
        ("A711", 5, 3, "task t needs 262144 B of L0C, more than the 131072 B"),
    ),
    "unaligned view": (
        """layer v(T = 64) {
  input x: f32[T, 64]
  output y: f32[T, 60]
  task t on aiv {
    let a = exp(x[:, :])
    y[:, :] = a[:, 4 : 64]
  }
}""",
        ("A712", 6, 5, "view starts inside a 32-byte block"),
    ),
    "a matmul over an empty inner dimension": (
        """layer e(T = 16, K = 0, N = 16) {
  input x: f16[T, 16]
  input w: f16[N, 16]
  output y: f32[T, N]
  task mm on aic {
    y[:, :] = matmul(x[:, 0 : K], w[:, 0 : K], b_trans)
  }
}""",
        ("A704", 6, 5, "matmul over an empty inner dimension (K = 0)"),
    ),  # found by the fuzz campaign (issue 14): a range() with step 0, an internal error
    "a tile far larger than UB": (
        """layer h(D = 1099511627776) {
  input x: f32[16, D]
  output y: f32[16, D]
  task t on aiv {
    let a = x[:, :] * 2.0
    y[:, :] = a
  }
}""",
        ("A711", 5, 5, "a [16, 1099511627776] f32 tile needs 70368744177664 B, more than the 196608 B of UB"),
    ),  # found by the fuzz campaign (issue 14): copies emitted per 256 bytes of it, a hang
    "too many rows for one DataCopy": (
        """layer r(T = 8192) {
  input x: f32[T, 4]
  output y: f32[T, 4]
  task t on aiv {
    y[:, :] = exp(x[:, :])
  }
}""",
        ("A713", 5, 5, "8192 rows in one DataCopy"),
    ),
    "barrier grid larger than the device": (
        """layer s(N = 64) {
  task t spmd(N) on aiv { barrier }
}""",
        ("A721", 2, 3, "holds a barrier over 64 blocks"),
    ),
    "vector work on the cube": (
        """layer k(T = 16) {
  input x: f32[T, 16]
  input w: f32[16, 16]
  output y: f32[T, 16]
  task t on aic {
    let a = matmul(x[:, :], w[:, :], b_trans)
    y[:, :] = a
    y[:, :] = x[:, :]
  }
}""",
        ("A701", 8, 5, "the cube core stores matmul results only"),
    ),
    "a notify on the cube": (
        """layer k(EP = 2) {
  ranks EP
  signal s: i32[EP]
  input x: f32[16, 16]
  input w: f32[16, 16]
  output y: f32[16, 16]
  task t on aic {
    y[:, :] = matmul(x[:, :], w[:, :], b_trans)
    notify s[rank] @ 0 += 1
  }
}""",
        ("A705", 9, 5, "cross-rank ops on the cube core"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_refusal_names_its_code_and_location(case):
    text, (code, line, col, message) = CASES[case]
    err = refusal(text)
    d = err.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == (code, line, col)
    assert message in d.message


def test_every_refusal_of_a_layer_is_reported_at_once():
    text = """layer two(T = 16) {
  input x: bf16[T, 16]
  input w: f32[16, 16]
  output y: bf16[T, 16]
  output z: f32[T, 16]
  task a on aiv { y[:, :] = x[:, :] * x[:, :] }
  task b on mix {
    let p = zeros(f32, [T, 16])
    p = matmul_acc(p, cast(x[:, :], f32), w[:, :], b_trans)
    p = exp(p)
    z[:, :] = p
  }
}"""
    codes = [(d.code, d.span.line) for d in refusal(text).diagnostics]
    assert codes == [("A702", 6), ("A703", 8)]


def test_the_cli_writes_a_project_per_layer(tmp_path, capsys):
    src = tmp_path / "ok.dsl"
    src.write_text(CASES["UB overflow"][0].replace("T = 256", "T = 8"), encoding="utf-8")
    assert main(["compile", str(src), "--target", "ascendc", "-o", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out" / "u").iterdir()) == [
        "CMakeLists.txt",
        "README.md",
        "u.asc",
        "u_kernels.h",
    ]
    assert "wrote" in capsys.readouterr().out


def test_the_cli_refuses_with_exit_2_the_diagnostic_and_no_files(tmp_path, capsys):
    src = tmp_path / "bad.dsl"
    src.write_text(CASES["a tile both cores of a mix task write"][0], encoding="utf-8")
    out = tmp_path / "out"
    assert main(["compile", str(src), "--target", "ascendc", "-o", str(out)]) == 2
    text = capsys.readouterr().out
    assert f"{src}:6:5: A703 a is written by both the cube and the vector core" in text
    assert "hint: accumulate into a local of its own" in text
    assert not out.exists()


def test_explain_knows_the_ascendc_codes(capsys):
    assert main(["explain", "A711"]) == 0
    assert "on-chip buffer does not fit" in capsys.readouterr().out
