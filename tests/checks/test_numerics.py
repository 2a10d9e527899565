"""Numerics rules (N201, N202, N204): what each finding says (N203: test_golden_tree.py; every
finding on the rule fixtures: test_rule_fixtures.py)."""

from __future__ import annotations

import math

import pytest
from lintutil import FIXTURES, lint, triples

from lowering.checks import all_rules
from lowering.checks.numerics.sentinel_not_dtype_extreme import round_to, suspicious

RULES = FIXTURES / "rules"


def test_n201_flags_fp32_split_k_atomics():
    diags = lint(RULES / "N201" / "bad.dsl")
    assert triples(diags) == [("N201", 10, 5)]
    (d,) = diags
    assert d.message.startswith("partial (spmd 4, AIC) accumulates f32 into y[0:32, 0:16] with an atomic add")
    assert "4 unordered writers (blocks 0..3)" in d.message
    assert "not bit-reproducible" in d.message
    assert "sum splits 0..3 in ascending order in a reduce task `after partial`" in d.hint


def test_n201_two_adds_onto_an_exact_zero_are_a_note_that_says_why():
    (d,) = lint(RULES / "N201" / "note_two_adds.dsl")
    assert (d.code, d.span.line, d.span.col, d.severity.value) == ("N201", 14, 5, "note")
    assert "exactly two unordered f32 atomic adds (blocks 0, 1) land in y[0:32, 0:16]" in d.message
    assert "(0 + a) + b equals (0 + b) + a bit for bit" in d.message
    assert "a third writer into these elements" in d.message
    # the third unordered writer: an error again
    (bad,) = lint(RULES / "N201" / "bad_three_adds.dsl")
    assert (bad.code, bad.span.line, bad.span.col, bad.severity.value) == ("N201", 12, 5, "error")
    assert "3 unordered writers (blocks 0..2)" in bad.message


@pytest.mark.parametrize(
    "seed, other",
    [
        ("y[:, :] = full(f32, [T, N], 1.0)", ""),  # not a zero
        ("y[:, :] = zeros(f32, [T, N])", "  task early on aiv after seed { y[:, :] += bias[:, :] atomic }\n"),
        (
            "y[:, :] = zeros(f32, [T, N])",
            "  task late on aiv { y[0, 0] = 1.0 }\n",
        ),  # a write not before the seed
    ],
)
def test_n201_two_adds_stay_an_error_without_an_exact_zero_first(tmp_path, seed, other):
    src = tmp_path / "two.dsl"
    src.write_text(
        "layer two(T = 32, K = 1024, N = 16) {\n  input x: f32[T, K]\n  input w: f32[N, K]\n"
        f"  input bias: f32[T, N]\n  output y: f32[T, N]\n  task seed on aiv {{ {seed} }}\n{other}"
        "  task partial spmd(2) on aic after seed {\n    let k0 = block * (K / 2)\n"
        "    y[:, :] += matmul(x[:, k0 : k0 + K / 2], w[:, k0 : k0 + K / 2], b_trans) atomic\n  }\n}\n"
    )
    found = [d for d in lint(src, codes={"N201"})]
    assert [(d.code, d.severity.value) for d in found] == [("N201", "error")]


def test_n201_exempts_integer_atomics_and_ordered_writers(tmp_path):
    src = tmp_path / "ordered.dsl"
    src.write_text(
        "layer o(T = 16, D = 8) {\n  input x: f32[T, D]\n  input c: i32[T, D]\n"
        "  output y: f32[T, D]\n  output n: i32[T, D]\n"
        "  task zero on aiv after prev(b), prev(c) { y[:, :] = zeros(f32, [T, D])\n    n[:, :] = zeros(i32, [T, D]) }\n"
        "  task a on aiv { y[:, :] += x[:, :] atomic }\n"  # one writer per element: deterministic
        "  task b on aiv after a { y[:, :] += x[:, :] atomic }\n"  # ordered after a
        "  task c spmd(4) on aiv { n[:, :] += c[:, :] atomic }\n"  # integer: exact
        "}\n"
    )
    assert lint(src, codes={"N201", "N202"}) == []


def test_n202_flags_unseeded_and_late_seeded_atomics():
    diags = lint(RULES / "N202" / "bad.dsl")
    assert triples(diags) == [("N202", 10, 7), ("N202", 11, 7)]
    missing, late = diags
    assert "nothing in the layer writes it before the adds" in missing.message
    assert "the only other write is reset, which runs after count" in late.message
    assert late.hint == "submit reset before count (the atomic read-modify-write then takes a RAW edge on it)"


def test_n202_seed_in_the_same_grid_needs_a_barrier(tmp_path):
    body = "    acc[:, :] = zeros(i32, [1, 8])\n{sep}    acc[:, :] += x[block : block + 1, :] atomic\n"
    for sep, expected in (("", [("N202", 6, 5)]), ("    barrier\n", [])):
        src = tmp_path / f"fused{len(sep)}.dsl"
        src.write_text(
            "layer f(B = 4) {\n  input x: i32[B, 8]\n  output acc: i32[1, 8]\n"
            "  task fused spmd(B) on aiv sync_start {\n" + body.format(sep=sep) + "  }\n}\n"
        )
        assert triples(lint(src, codes={"N202"})) == expected


def test_n204_flags_finite_sentinels():
    diags = lint(RULES / "N204" / "bad.dsl")
    assert triples(diags) == [("N204", 9, 31), ("N204", 11, 63), ("N204", 14, 83)]
    first = diags[0]
    assert first.severity == "warning"
    assert first.message.startswith("-3.402823e+38 looks like a minimum sentinel but is not the f32 extreme")
    assert first.hint == "use -inf (or the exact -3.4028234663852886e+38, finfo(f32).min)"
    assert "f16 extreme (-65504.0)" in diags[2].message


@pytest.mark.parametrize(
    ("value", "dtype", "flagged"),
    [
        (-3.402823e38, "f32", True),
        (-3.4028235e38, "f32", False),  # rounds to -FLT_MAX exactly
        (-1e30, "f32", True),
        (-1e9, "f32", False),  # an ordinary large constant, not a sentinel by magnitude
        (-65504.0, "f32", True),  # the f16 extreme in an f32 computation
        (-65504.0, "f16", False),
        (-65500.0, "f16", False),  # rounds to -65504 in f16
        (-3.3895313892515355e38, "bf16", False),
        (-1e30, "f16", False),  # overflows to -inf in f16
        (-math.inf, "f32", False),
    ],
)
def test_n204_sentinel_classification(value, dtype, flagged):
    assert suspicious(value, dtype) is flagged


def test_round_to_bf16_is_round_to_nearest_even():
    assert round_to(1.0 + 2**-8, "bf16") == 1.0  # a tie goes to the even mantissa
    assert round_to(1.0 + 3 * 2**-8, "bf16") == 1.0 + 2**-6


def test_numerics_rules_are_registered():
    assert {"N201", "N202", "N203", "N204"} <= set(all_rules())  # N203: tests/checks/test_golden_tree.py


def test_n201_flags_float_remote_atomics_from_every_rank(tmp_path):
    src = tmp_path / "combine.dsl"
    src.write_text(
        "layer combine(EP = 4 in {2, 4}, T = 16, D = 32) {\n  ranks EP\n  input y: f32[T, D]\n"
        "  window acc: f32[T, D]\n"
        "  task scatter on aiv {\n"
        "    for dst in range(EP) { remote_store acc[0 : T, :] @ dst += y[:, :] }\n"
        "  }\n}\n"
    )
    diags = lint(src, codes={"N201", "N202"})
    assert triples(diags) == [("N201", 6, 41)]
    assert "4 unordered writers (ranks 0..3)" in diags[0].message


def test_n202_a_next_round_seed_not_ordered_after_this_round_adds():
    (d,) = lint(RULES / "N202" / "bad_rounds.dsl")
    assert (d.code, d.span.line, d.span.col, d.severity.value) == ("N202", 9, 22, "error")
    assert d.message.startswith(
        "zero seeds counts[0:8, 0:1] for the adds of count, but nothing orders it after those of the "
        "previous round: round r + 1's seed can land while round r's adds still do"
    )
    assert d.hint == "add `after prev(count)` to task zero"
    assert lint(RULES / "N202" / "good_rounds.dsl") == []


def test_n202_names_the_last_adders_of_the_previous_round(tmp_path):
    # the bias add follows the split-K adds (its RMW reads them): ordering after it is enough
    src = (
        (RULES / "N201" / "note_two_adds.dsl")
        .read_text(encoding="utf-8")
        .replace(" after prev(add_bias)", "")
    )
    path = tmp_path / "two.dsl"
    path.write_text(src, encoding="utf-8")
    (d,) = [d for d in lint(path) if d.code == "N202"]
    assert "for the adds of partial and add_bias" in d.message
    assert d.hint == "add `after prev(add_bias)` to task seed"
