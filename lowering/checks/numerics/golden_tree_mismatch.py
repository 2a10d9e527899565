"""N203: a golden that sums a reduction with another tree than the kernel (R5).

## What it catches

Each split reduction the compiler knows has a summation tree: the split count, the chunks
each split folds in order before the cross-split sum (when the body shows them), the
cross-split order (ascending: ((p0 + p1) + p2) + ...) and the accumulator dtype. A
`reduce_sum` records its tree when it is lowered; hand-written partials and reduce (a fused
kernel, where a `reduce_sum` cannot cross a `barrier`) declare theirs at layer level:

    reduction sq_sum: splits RMS_OK, chunks RMS_CHUNKS_PER_SPLIT

The layer's golden (`golden "x_golden.py"`) declares the tree it evaluates, as a
module-level literal that dslc reads without importing or running the golden:

    REDUCTION_TREES = {"sq_sum": {"splits": "RMS_OK", "chunks_per_split": 2}}

(keys `splits`, `chunks_per_split`, `order`, `dtype`; counts are integers or strings with an
integer expression over the layer's parameters and constants, so they follow `--set`; see
`lowering/golden_trees.py`). N203 is a **warning** at the `reduce_sum` (or `reduction`) when
the two trees differ, and when `REDUCTION_TREES` or its entry cannot be read; a **note** when
the layer has a golden that does not declare the tree of a reduced tensor (nothing to check
against), or the golden file cannot be read. Matching trees, and layers without a golden,
are silent.

Trees are compared at the layer's parameter point (defaults or `--set`). A flat fold is the
same tree however it is written: 1 split of 32 chunks = 32 splits of 1 chunk. Chunks are
compared only when both sides know them: the kernel knows them when the `reduce_sum` body
returns one value (1 chunk) or folds `v = v + chunk` / `matmul_acc` without `k_group`
steps into a local (one per step, in a `for ... in range` or written out); a `matmul_acc`
chain with `k_group` continues one cube fold across chunks, so only its splits count.

Design. The kernel's trees live in the IR (`Graph.reductions`, one `Reduction` per
`reduce_sum` or `reduction` statement), so any backend or rule can use them. The golden's
tree is data, not code: the lint never imports or runs user code, so `REDUCTION_TREES` is
read with `ast.literal_eval` and its count expressions by a small evaluator that knows only
integers, the layer's names and `+ - * / // %`. Keys are tensor names, the one vocabulary
the layer and its golden share. A `reduction` statement is taken as stated (it is not
matched against the hand-written bodies). Not modelled: the order inside a chunk (`row_sum`
over 512 elements vs `np.sum`), the cube's k-group fold, and R5's other mirrors (rounding
mode, division vs reciprocal-multiply, int32 accumulate then dequantize).

## Why it breaks on the device

Floating-point addition is not associative: ((c0 + c1) + c2) + c3 and (c0 + c1) + (c2 + c3)
differ in the last bits. A golden with another grouping than the kernel disagrees by a few
ULP, which the tolerances absorb, so the comparison cannot tell a correct kernel from one
with a small bug; and where the result feeds a top-k, an argmax or a BF16 rounding, a tie
flips and the golden fails (or passes) for the wrong reason. In pypto-lib #982 the fused
`hc_pre` sums the RMS in 16 partials of 2 chunks, while the golden kept one accumulator
over all 32 chunks (docs/runtime-semantics.md §17.3, the reviewer's remark); #847/#897 (int32
accumulate order) and #844/#896 (a rounding mode that flipped a top-k) are the same class.

## Example

    # hc_pre_fused.dsl                       # hc_pre_fused_golden.py
    reduction sq_sum: splits 16, chunks 2    REDUCTION_TREES = {"sq_sum": {"splits": 1, "chunks_per_split": 32}}
                                             # N203: golden flat 32-term fold; kernel 16x2 two-level fold

## Use instead

Evaluate the reduction in the golden with the kernel's tree and declare that tree. For a
`reduce_sum`, `runtime.reduction.reduce_splits(split, S)` (or `ascending_sum` over the
partials) is the lowering's cross-split fold; compute each split's partial the kernel's way
(its chunks in order), then:

    from runtime.reduction import reduce_splits
    REDUCTION_TREES = {"sq_sum": {"splits": "RMS_OK", "chunks_per_split": "HC_DIM / RMS_OK / RMS_K_CHUNK"}}
    ...
    sq_sum = reduce_splits(lambda s: fold_chunks(x, s), params["RMS_OK"])

Naming the same parameter as the kernel (`"splits": "LINEAR_OK"`) keeps the declaration
right under `--set`.

## What dslc verify shows

``dslc verify`` proves the kernels deterministic and their outputs within the golden's
tolerances in every schedule: the finding is about the bits the tolerances hide, not a
schedule-dependent result.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points); counts in the golden are evaluated at each
point.
Rounds: not round-dependent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from lowering.checks.rule import CheckContext, finding
from lowering.golden_trees import GoldenTree, GoldenTrees, evaluate_text, read_golden_trees
from lowering.ir import Graph, Reduction
from lowering.source import Diagnostic
from lowering.symbolic import Const, EvalError, Expr, evaluate, render, simplify

CODE = "N203"
NAME = "golden_tree_mismatch"
FAMILY = "numerics"
SEVERITY = "warning"
SUMMARY = "a golden sums a reduction with another tree (splits, chunk grouping, order, dtype) than the kernel"

_WHY = "the two round differently: a few ULP that tolerances hide, or a tie that flips a top-k or an argmax"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    if graph.golden is None or not graph.reductions:
        return
    env = graph.env()
    golden = read_golden_trees(graph.file, graph.golden, env)
    for r in graph.reductions:
        try:
            splits = evaluate(r.splits, env)
            chunks = evaluate(r.chunks, env) if r.chunks is not None else None
        except EvalError:
            continue
        yield from _check_one(graph, golden, r, splits, chunks)


def _check_one(graph: Graph, golden: GoldenTrees, r: Reduction, splits: int, chunks: int | None):
    name = graph.golden
    kernel = _text(splits, chunks, r.order)
    declare = _declaration(graph, r, splits, chunks)
    if golden.error is not None:
        yield finding(
            CODE,
            "note",
            r.span,
            f"{golden.error}; the golden's reduction tree of {r.tensor} cannot be checked",
        )
        return
    if golden.malformed is not None or r.tensor in golden.invalid:
        why = golden.malformed or golden.invalid[r.tensor]
        yield finding(
            CODE,
            "warning",
            r.span,
            f"{why}; the golden's reduction tree of {r.tensor} cannot be checked against the kernel's ({kernel})",
            fix=f"write it as a literal: {declare}",
            related=((golden.span, "the declaration"),) if golden.span else (),
        )
        return
    tree = golden.trees.get(r.tensor)
    if tree is None:
        what = f"declares no tree for {r.tensor}" if golden.declared else "declares no REDUCTION_TREES"
        yield finding(
            CODE,
            "note",
            r.span,
            f"the golden {name} {what}, so dslc cannot check that it sums {r.tensor} as the kernel "
            f"does ({_where(r)}: {kernel})",
            fix=f"make the golden evaluate {r.tensor} with that tree and declare it in {name} "
            f"(a module-level literal, read without running the golden): {declare}",
            related=((golden.span, "the golden's REDUCTION_TREES"),) if golden.span else (),
        )
        return
    parts = _differences(r, splits, chunks, tree)
    if not parts:
        return
    yield finding(
        CODE,
        SEVERITY,
        r.span,
        f"the golden {name} {' and '.join(parts)}; {_WHY}",
        fix=f"evaluate {r.tensor} in the golden with the kernel's tree ({_recipe(splits, chunks, r.dtype)}) "
        f"and declare it: {_declaration(graph, r, splits, chunks, dtype=tree.dtype is not None)}",
        related=((tree.span, f"the golden's tree of {r.tensor}"),),
    )


def _canonical(splits: int, chunks: int | None) -> tuple[int, int | None]:
    """A flat fold is one tree however it is split: 1 x n == n x 1."""
    if chunks is not None and splits == 1:
        return chunks, 1
    return splits, chunks


def _differences(r: Reduction, splits: int, chunks: int | None, tree: GoldenTree) -> list[str]:
    ks, kc = _canonical(splits, chunks)
    gs, gc = _canonical(tree.splits, tree.chunks)
    parts = []
    shape_differs = ks != gs or (kc is not None and gc is not None and kc != gc)
    if shape_differs or tree.order != r.order:
        g_text = _text(tree.splits, tree.chunks, tree.order)
        k_text = _text(splits, chunks, r.order)
        if g_text == k_text:  # only the known/unknown chunks differ in wording
            g_text, k_text = f"{g_text} ({tree.order})", f"{k_text} ({r.order})"
        parts.append(f"sums {r.tensor} as {g_text} where the kernel ({{where}}) sums it as {k_text}")
    if tree.dtype is not None and tree.dtype != r.dtype:
        kernel = "the kernel ({where})" if not parts else "the kernel"
        parts.append(f"accumulates {r.tensor} in {tree.dtype} where {kernel} accumulates {r.dtype}")
    return [p.replace("{where}", _where(r)) for p in parts]


def _text(splits: int, chunks: int | None, order: str) -> str:
    s, c = _canonical(splits, chunks)
    if c == 1:
        return f"a flat {s}-term {order} fold"
    if c is not None:
        return f"a two-level {order} fold of {s} partials of {c} chunks ({s}x{c})"
    return f"{s} partials folded in {order} order" if s > 1 else "one partial"


def _where(r: Reduction) -> str:
    if r.source == "declared":
        return "`reduction` statement"
    return f"reduce_sum in task {r.task}" if r.task else "reduce_sum"


def _recipe(splits: int, chunks: int | None, dtype: str) -> str:
    inner = f", each split folding its {chunks} chunks in order" if chunks not in (None, 1) else ""
    return f"runtime.reduction.reduce_splits(split, {splits}) over {dtype} partials{inner}"


def _declaration(graph: Graph, r: Reduction, splits: int, chunks: int | None, dtype: bool = False) -> str:
    entry: dict[str, int | str] = {"splits": _count(graph, r.splits, splits)}
    if chunks is not None and chunks != 1:
        entry["chunks_per_split"] = _count(graph, r.chunks, chunks)
    if dtype:
        entry["dtype"] = r.dtype
    return f"REDUCTION_TREES = {{{json.dumps(r.tensor)}: {json.dumps(entry)}}}"


def _count(graph: Graph, expr: Expr | None, value: int) -> int | str:
    """The kernel's count as the golden should write it: the parameter expression when it is
    one the golden can evaluate (so it follows --set), else the number."""
    if expr is None or isinstance(simplify(expr), Const):
        return value
    best: str | None = None
    for form in (expr, simplify(expr)):  # as written, or simplified when that is shorter
        text = render(form, python=True)
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        try:
            ok = evaluate_text(text, graph.env()) == value
        except ValueError:
            ok = False
        if ok and (best is None or len(text) < len(best)):
            best = text
    return best if best is not None else value
