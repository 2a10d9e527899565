"""N203 golden_tree_mismatch: the kernel's reduction trees in the IR, the golden's as data."""

from __future__ import annotations

from pathlib import Path

import pytest
from lintutil import FIXTURES, lint, triples

from dsl.driver.api import compile_layer
from dsl.frontend import compile_file, compile_text
from lowering.checks import all_rules
from lowering.golden_trees import TreeError, evaluate_text, read_golden_trees
from lowering.source import CompileError
from lowering.symbolic import evaluate

N203 = FIXTURES / "rules" / "N203"

SPLITK = """layer splitk(T = 32, K = 512, N = 16, SPLITS = 4 in {2, 4, 8}) {
  golden "g.py"
  input  x: f32[T, K]
  input  w: f32[N, K]
  output y: f32[T, N]
  task linear spmd(T / 16) on aic {
    let t0 = block * 16
    y[t0 : t0 + 16, :] = reduce_sum s in range(SPLITS) {
      let k0 = s * (K / SPLITS)
      return matmul(x[t0 : t0 + 16, k0 : k0 + K / SPLITS], w[:, k0 : k0 + K / SPLITS], b_trans)
    }
  }
}
"""  # the reduce_sum is at (8, 26)


def layer_with_golden(tmp_path: Path, golden: str | None, source: str = SPLITK) -> Path:
    src = tmp_path / "layer.dsl"
    src.write_text(source)
    if golden is not None:
        (tmp_path / "g.py").write_text(golden)
    return src


def n203(path: Path, overrides=None):
    return lint(path, overrides=overrides, codes={"N203"})


# ---------------------------------------------------------------- the fixtures


def test_n203_is_a_numerics_warning():
    rule = all_rules()["N203"]
    assert (rule.name, rule.family, rule.severity) == ("golden_tree_mismatch", "numerics", "warning")


def test_bad_fixture_flags_the_flat_rms_fold_and_the_f64_linear_sum():
    diags = lint(N203 / "bad.dsl")
    assert triples(diags) == [("N203", 16, 3), ("N203", 20, 30)]
    mixes, rms = diags
    assert {mixes.severity, rms.severity} == {"warning"}
    assert rms.message == (
        "the golden bad_golden.py sums sq_sum as a flat 16-term ascending fold where the kernel "
        "(reduce_sum in task rms) sums it as a two-level ascending fold of 8 partials of 2 chunks (8x2); "
        "the two round differently: a few ULP that tolerances hide, or a tie that flips a top-k or an argmax"
    )
    assert rms.hint.endswith('REDUCTION_TREES = {"sq_sum": {"splits": "SPLITS", "chunks_per_split": "PER"}}')
    assert (
        "runtime.reduction.reduce_splits(split, 8) over f32 partials, each split folding its 2 chunks"
        in rms.hint
    )
    ((span, what),) = rms.related
    assert (Path(span.file).name, span.line, span.col, what) == (
        "bad_golden.py",
        15,
        5,
        "the golden's tree of sq_sum",
    )
    assert mixes.message.startswith(
        "the golden bad_golden.py accumulates mixes in f64 where the kernel (`reduction` statement) accumulates f32"
    )
    assert mixes.hint.endswith('REDUCTION_TREES = {"mixes": {"splits": "SPLITS", "dtype": "f32"}}')


def test_bad_fixture_still_passes_its_tolerances(tmp_path, monkeypatch):
    """Why N203 exists: the comparison against the golden does not see the wrong tree."""
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    layer = compile_layer(N203 / "bad.dsl")
    inputs = layer.make_inputs(seed=0)
    assert layer.validate(inputs, layer.run(inputs[0])).passed


@pytest.mark.parametrize("splits", [None, 2, 4])
def test_good_fixture_is_clean_under_every_rule_and_follows_set(splits):
    overrides = {"SPLITS": splits} if splits else None
    assert lint(N203 / "good.dsl", overrides=overrides) == []


@pytest.mark.parametrize("splits", [8, 2])
def test_good_fixture_golden_equals_the_kernel_bit_for_bit(tmp_path, monkeypatch, splits):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    layer = compile_layer(N203 / "good.dsl", {"SPLITS": splits})
    inputs = layer.make_inputs(seed=1)
    validation = layer.validate(inputs, layer.run(inputs[0], policy="random", seed=5))
    assert validation.passed and validation.checks
    assert all(c.max_abs_err == 0.0 for c in validation.checks)


def test_bad_undeclared_fixture_is_a_note_with_the_declaration_to_add():
    diags = lint(N203 / "bad_undeclared.dsl")
    assert triples(diags) == [("N203", 12, 26)]
    (d,) = diags
    assert d.severity == "note"
    assert d.message == (
        "the golden bad_undeclared_golden.py declares no REDUCTION_TREES, so dslc cannot check that it sums y "
        "as the kernel does (reduce_sum in task linear: a flat 4-term ascending fold)"
    )
    assert d.hint.endswith('REDUCTION_TREES = {"y": {"splits": "SPLITS"}}')


# ---------------------------------------------------------------- the IR records the trees


def test_reduce_sum_records_splits_chunks_dtype_and_span():
    (g,) = compile_file(N203 / "good.dsl")
    env = g.env()
    rms, mixes = sorted(g.reductions, key=lambda r: r.span.line, reverse=True)
    assert (rms.tensor, rms.task, rms.source, rms.dtype, rms.order) == (
        "sq_sum",
        "rms",
        "reduce_sum",
        "f32",
        "ascending",
    )
    assert (evaluate(rms.splits, env), evaluate(rms.chunks, env)) == (8, 2)
    assert (rms.span.line, rms.span.col, rms.span.end_col - rms.span.col) == (21, 30, len("reduce_sum"))
    assert (mixes.tensor, mixes.task, mixes.source, mixes.chunks) == ("mixes", None, "declared", None)
    assert evaluate(mixes.splits, env) == 8


@pytest.mark.parametrize(
    "body, chunks",
    [
        ("return x[t0 : t0 + 8, s * 32 : s * 32 + 16]", 1),
        (
            "let a = x[t0 : t0 + 8, s * 32 : s * 32 + 16]\n a = a + x[t0 : t0 + 8, s * 32 + 16 : s * 32 + 32]\n return a",
            2,
        ),
        (
            "let a = zeros(f32, [8, 16])\n for c in range(3) { a = a + x[t0 : t0 + 8, s * 32 + c : s * 32 + c + 16] }\n return a",
            3,
        ),
        (
            "let a = x[t0 : t0 + 8, s * 32 : s * 32 + 16]\n for c in range(1, 4) { a = a + x[t0 : t0 + 8, s * 32 + c : s * 32 + c + 16] }\n return a",
            4,
        ),
        ("return x[t0 : t0 + 8, s * 32 : s * 32 + 16] + x[t0 : t0 + 8, s * 32 + 16 : s * 32 + 32]", None),
        (
            "let a = zeros(f32, [8, 16])\n for c in parallel(3) { a = a + x[t0 : t0 + 8, s * 32 + c : s * 32 + c + 16] }\n return a",
            None,
        ),
        ("let a = zeros(f32, [8, 16])\n if s > 0 { a = x[t0 : t0 + 8, 0 : 16] }\n return a", None),
    ],
)
def test_chunks_per_split_is_read_from_the_reduce_sum_body(body, chunks):
    src = (
        "layer r(T = 16) {\n  input x: f32[T, 128]\n  output y: f32[T, 16]\n"
        "  task t spmd(T / 8) on aiv {\n    let t0 = block * 8\n"
        f"    y[t0 : t0 + 8, :] = reduce_sum s in range(4) {{\n {body}\n    }}\n  }}\n}}\n"
    )
    (g,) = compile_text(src, "r.dsl")
    (r,) = g.reductions
    assert evaluate(r.splits, g.env()) == 4
    assert (evaluate(r.chunks, g.env()) if r.chunks is not None else None) == chunks


def test_a_cube_chain_with_k_group_has_no_chunk_level():
    src = (
        "layer c(T = 16, K = 256) {\n  input x: f32[T, K]\n  input w: f32[8, K]\n  output y: f32[T, 8]\n"
        "  task t spmd(T / 16) on aic {\n    let t0 = block * 16\n"
        "    y[t0 : t0 + 16, :] = reduce_sum s in range(4) {\n"
        "      let acc = zeros(f32, [16, 8])\n"
        "      for kb in range(2) {\n        let k0 = s * 64 + kb * 32\n"
        "        acc = matmul_acc(acc, x[t0 : t0 + 16, k0 : k0 + 32], w[:, k0 : k0 + 32], b_trans, k_group = 4)\n"
        "      }\n      return acc\n    }\n  }\n}\n"
    )
    (g,) = compile_text(src, "c.dsl")
    (r,) = g.reductions
    assert r.chunks is None and evaluate(r.splits, g.env()) == 4
    without = src.replace(", k_group = 4", "")
    (g,) = compile_text(without, "c.dsl")
    assert evaluate(g.reductions[0].chunks, g.env()) == 2


def test_layers_without_reductions_record_none():
    (g,) = compile_file(FIXTURES / "rules" / "N201" / "good.dsl")
    assert g.reductions == []


@pytest.mark.parametrize(
    "stmt, code, col",
    [
        ("reduction nope: splits 2", "E201", 13),
        ("reduction y: splits 0", "E207", 23),
        ("reduction y: splits 2, chunks K - K", "E207", 33),
        ("reduction y: splits n", "E201", 23),
        ("reduction y splits 2", "E101", 15),
    ],
)
def test_reduction_statement_errors(stmt, code, col):
    src = f"layer r(K = 4) {{\n  output y: f32[4, 4]\n  {stmt}\n}}\n"
    with pytest.raises(CompileError) as err:
        compile_text(src, "r.dsl")
    assert [(d.code, d.span.line, d.span.col) for d in err.value.diagnostics] == [(code, 3, col)]


def test_reduction_keywords_stay_usable_as_names():
    src = (
        "layer r(T = 4) {\n  output y: f32[T, 4]\n  reduction y: splits 2, chunks 3\n"
        "  task t on aiv {\n    let reduction = 1\n    let splits = 2\n    let chunks = 3\n"
        "    y[:, :] = zeros(f32, [T, 4])\n  }\n}\n"
    )
    (g,) = compile_text(src, "r.dsl")
    (r,) = g.reductions
    assert (r.tensor, r.source, evaluate(r.splits, g.env()), evaluate(r.chunks, g.env())) == (
        "y",
        "declared",
        2,
        3,
    )


# ---------------------------------------------------------------- comparing with the golden


@pytest.mark.parametrize(
    "declaration",
    [
        '{"y": {"splits": "SPLITS"}}',
        '{"y": {"splits": "SPLITS", "chunks_per_split": 1, "order": "ascending", "dtype": "f32"}}',
        '{"y": {"splits": 1, "chunks_per_split": "SPLITS"}}',  # a flat fold, however it is split
        '{"y": {"splits": "K // 128 * SPLITS // 4"}}',
    ],
)
def test_matching_declarations_are_silent(tmp_path, declaration):
    src = layer_with_golden(tmp_path, f"REDUCTION_TREES = {declaration}\n")
    assert n203(src) == []


@pytest.mark.parametrize("declaration", ['{"y": {"splits": 4}}', '{"y": {"splits": "K // 128"}}'])
def test_a_count_that_matches_only_the_default_is_reported_at_the_other_values(tmp_path, declaration):
    # SPLITS in {2, 4, 8}: a golden that states 4 splits is right at the default only
    src = layer_with_golden(tmp_path, f"REDUCTION_TREES = {declaration}\n")
    found = n203(src)
    assert [(d.code, d.span.line) for d in found] == [("N203", 8)]
    assert found[0].message.endswith("(at SPLITS=2)")


@pytest.mark.parametrize(
    "declaration, words",
    [
        ('{"y": {"splits": 8}}', "sums y as 8 partials folded in ascending order where the kernel"),
        (
            '{"y": {"splits": 2, "chunks_per_split": 2}}',
            "a two-level ascending fold of 2 partials of 2 chunks (2x2)",
        ),
        (
            '{"y": {"splits": 4, "order": "pairwise"}}',
            "sums y as 4 partials folded in pairwise order where the kernel",
        ),
        (
            '{"y": {"splits": 4, "dtype": "f64"}}',
            "accumulates y in f64 where the kernel (reduce_sum in task linear)",
        ),
    ],
)
def test_differing_declarations_warn(tmp_path, declaration, words):
    src = layer_with_golden(tmp_path, f"REDUCTION_TREES = {declaration}\n")
    diags = n203(src)
    assert triples(diags) == [("N203", 8, 26)]
    assert diags[0].severity == "warning" and words in diags[0].message


def test_a_literal_count_does_not_follow_set_but_a_parameter_name_does(tmp_path):
    fixed = layer_with_golden(tmp_path, 'REDUCTION_TREES = {"y": {"splits": 4}}\n')
    everywhere = n203(fixed)  # every admissible value, not only the default
    assert len(everywhere) == 1 and everywhere[0].message.endswith("(at SPLITS=2)")
    at_8 = n203(fixed, {"SPLITS": 8})
    assert triples(at_8) == [("N203", 8, 26)] and "(at " not in at_8[0].message
    (tmp_path / "g.py").write_text('REDUCTION_TREES = {"y": {"splits": "SPLITS"}}\n')
    assert n203(fixed, {"SPLITS": 8}) == []


def test_the_golden_is_read_never_run(tmp_path):
    golden = (
        "import sys\nraise SystemExit('the lint ran the golden')\n"
        'REDUCTION_TREES: dict = {"y": {"splits": "SPLITS"}}\n'
    )
    assert n203(layer_with_golden(tmp_path, golden)) == []


def test_a_golden_that_omits_the_tensor_gets_a_note_pointing_at_its_table(tmp_path):
    src = layer_with_golden(tmp_path, 'X = 1\nREDUCTION_TREES = {"other": {"splits": 2}}\n')
    (d,) = n203(src)
    assert (d.severity, d.span.line, d.span.col) == ("note", 8, 26)
    assert "declares no tree for y, so dslc cannot check" in d.message
    ((span, what),) = d.related
    assert (Path(span.file).name, span.line, what) == ("g.py", 2, "the golden's REDUCTION_TREES")


@pytest.mark.parametrize(
    "golden, words",
    [
        ('REDUCTION_TREES = dict(y={"splits": 4})\n', "REDUCTION_TREES in g.py is not a literal"),
        ('N = 4\nREDUCTION_TREES = {"y": {"splits": N}}\n', "REDUCTION_TREES in g.py is not a literal"),
        ('REDUCTION_TREES = [("y", 4)]\n', "must be a dict literal"),
        ('REDUCTION_TREES = {"y": {"split": 4}}\n', "REDUCTION_TREES['y'] in g.py: unknown key 'split'"),
        ('REDUCTION_TREES = {"y": {"chunks_per_split": 4}}\n', '"splits" is required'),
        (
            'REDUCTION_TREES = {"y": {"splits": "SPLIT"}}\n',
            "'SPLIT' is not a parameter or constant of the layer",
        ),
        ('REDUCTION_TREES = {"y": {"splits": "__import__(\'os\')"}}\n', "only integers, names and"),
        ('REDUCTION_TREES = {"y": {"splits": 0}}\n', "splits must be at least 1, got 0"),
        ('REDUCTION_TREES = {"y": {"splits": True}}\n', "splits must be an integer or an expression string"),
        ('REDUCTION_TREES = {"y": {"splits": 4, "order": "random"}}\n', "order 'random' is not one of"),
        ('REDUCTION_TREES = {"y": {"splits": 4, "dtype": "float"}}\n', "dtype 'float' is not one of"),
    ],
)
def test_unreadable_declarations_warn(tmp_path, golden, words):
    (d,) = n203(layer_with_golden(tmp_path, golden))
    assert (d.severity, d.span.line, d.span.col) == ("warning", 8, 26)
    assert (
        words in d.message
        and "cannot be checked against the kernel's (a flat 4-term ascending fold)" in d.message
    )


@pytest.mark.parametrize(
    "golden, words",
    [(None, "cannot read g.py"), ("def golden(:\n", "g.py is not valid Python")],
)
def test_a_missing_or_broken_golden_file_is_a_note(tmp_path, golden, words):
    (d,) = n203(layer_with_golden(tmp_path, golden))
    assert (d.severity, d.span.line) == ("note", 8)
    assert words in d.message


def test_layers_without_a_golden_are_silent(tmp_path):
    src = layer_with_golden(tmp_path, None, SPLITK.replace('  golden "g.py"\n', ""))
    assert n203(src) == []


def test_a_finding_can_be_suppressed_on_the_reduce_sum_line(tmp_path):
    from lintutil import lint_suppressed

    source = SPLITK.replace(
        "reduce_sum s in range(SPLITS) {",
        "reduce_sum s in range(SPLITS) {  # dslc: ignore[N203] golden is generated elsewhere",
    )
    src = layer_with_golden(tmp_path, 'REDUCTION_TREES = {"y": {"splits": 2}}\n', source)
    assert lint_suppressed(src, codes={"N203"}) == []


def test_reader_evaluates_counts_and_locates_keys(tmp_path):
    (tmp_path / "g.py").write_text(
        "# the trees\nREDUCTION_TREES = {\n"
        '    "a": {"splits": "(H - 4) // 2 % 5", "chunks_per_split": 3},\n'
        '    "b": {"splits": 2, "order": "descending", "dtype": "f64"},\n}\n'
    )
    trees = read_golden_trees(str(tmp_path / "layer.dsl"), "g.py", {"H": 20})
    assert trees.declared and trees.error is None and trees.malformed is None and not trees.invalid
    a, b = trees.trees["a"], trees.trees["b"]
    assert (a.splits, a.chunks, a.order, a.dtype) == (3, 3, "ascending", None)
    assert (b.splits, b.chunks, b.order, b.dtype) == (2, None, "descending", "f64")
    assert (a.span.line, a.span.col, b.span.line) == (3, 5, 4)
    assert (trees.span.line, trees.span.col) == (2, 1)


@pytest.mark.parametrize("text", ["open('x')", "H.real", "[H]", "H ** 2", "1 / 0", "H if H else 1", ""])
def test_count_expressions_are_evaluated_without_eval(text):
    with pytest.raises(TreeError):
        evaluate_text(text, {"H": 3})


@pytest.mark.parametrize(("text", "value"), [("H / 2 + -H % 4", 4), ("-H // 2", -4), ("+H * (H - 1)", 42)])
def test_count_expressions_use_the_layer_languages_integer_arithmetic(text, value):
    """`/` is exact integer division and `//`, `%` floor as in the layer language."""
    assert evaluate_text(text, {"H": 7}) == value
