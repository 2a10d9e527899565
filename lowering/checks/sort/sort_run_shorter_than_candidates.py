"""S301: a sort32 + mrgsort chain leaves sorted runs shorter than the candidates that can be finite.

## What it catches

A top-k built from ``sort32`` and ``mrgsort`` stages over one row of W records (2W columns),
read out with ``topk_pairs(s, k)`` or a slice ``s[:, 0:P]``, where for some admissible
parameter value (docs/runtime-semantics.md §18.3, rule R6):

- (b) the sorted run after the chain, R = 32·4^m records for m merge stages, is shorter than
  the number of candidates that can be finite in the row;
- (c) the readout reads more than the first 2R columns (past run 0);
- (d) more candidates can be finite than the row holds (cap > W).

The finite-candidate bound comes from ``valid(row, n)`` / ``fillpad(row, n, -inf)`` on the
sorted row, or from what the producers stored into the tensor the row is loaded from (a
score loop that writes columns ``[0, INDEXER_SCORE_CAP)`` of a ``-inf``-initialised row),
at most the width of the loaded window (a 512-column chunk of a vocab-wide row). It
is evaluated at every admissible parameter point (``T in 128..8192 step 128``), and the
message names the true threshold and the failing parameter values.

## Why it breaks on the device

``sort32`` sorts runs of 32 records; each ``mrgsort(block_len)`` merges 4 consecutive sorted
lists of ``block_len`` columns (two columns per record: value and index), so runs grow
32 → 128 → 512 → 2048 records. The top-k reads the head of run 0. When more than R
candidates are finite, run 0 holds only the best of the first R of them; candidates R and
beyond are never compared. The kernel returns valid, unique, well-sorted and wrong indices,
and only for long chunks (dspark prefill indexer: INDEXER_SCORE_CAP = T/2 with two stages is
wrong for T > 1024). No comparator on short test chunks sees it.

## Example

    let s = sort32(score_wide[t : t + 1, :], ramp[0 : 1, :])   # up to INDEXER_SCORE_CAP finite
    s = mrgsort(s, 64)
    s = mrgsort(s, 256)                                        # runs of 512 records
    topk_out[t : t + 1, 0 : 2 * TOPK_CAP] = topk_pairs(s, TOPK_CAP)

## Use instead

    s = mrgsort(s, 256)
    if INDEXER_SCORE_CAP > 512 { s = mrgsort(s, 1024) }        # runs of 2048 records
    # or unconditionally: three stages sort the whole 2048-record row

## Parameter and round coverage

Parameters: every admissible point of each structure class, thinned beyond 4,096.
Rounds: not round-dependent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from lowering.checks.extents import point_text, points_text
from lowering.checks.rule import CheckContext, finding
from lowering.checks.validity import facts_for
from lowering.checks.validity_facts import needed_stages
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "S301"
NAME = "sort_run_shorter_than_candidates"
FAMILY = "sort"
SEVERITY = "error"
SUMMARY = "a sort32/mrgsort chain's sorted run is shorter than the candidates that can be finite"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def _bad(ev) -> bool:
    if ev.kind == "row":
        return True
    chain = ev.chain  # candidates past the row are S301 (d) at the sort32, not here
    return min(chain.finite, chain.records) > chain.run or ev.detail["prefix"] > 2 * chain.run


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    if not any("sort32" in t.ops for t in graph.tasks):
        return
    fails: dict[tuple, list] = defaultdict(list)
    passes: dict[tuple, list] = defaultdict(list)
    order: list[tuple] = []
    for point in graph.admissible_points():
        facts = facts_for(ctx, point, "sort")
        for task in graph.tasks:
            for ev in facts[task.name].sorts:
                if ev.kind not in ("readout", "row") or ev.chain.broken:
                    continue
                key = (ev.span, ev.kind)
                if key not in fails and key not in passes:
                    order.append(key)
                (fails if _bad(ev) else passes)[key].append((point, ev, task))
    for key in order:
        if key in fails:
            yield _message(graph, fails[key], passes.get(key, []))


def _message(graph: Graph, fails: list, passes: list) -> Diagnostic:
    point, ev, task = fails[0]
    chain = ev.chain
    where = point_text(graph, point)
    bad_at = points_text(graph, [p for p, _, _ in fails])
    good_at = f"; correct for {points_text(graph, [p for p, _, _ in passes])}" if passes else ""
    if ev.kind == "row":
        width = ev.detail["width"]
        worst = max(e.chain.finite for _, e, _ in fails)
        return finding(
            CODE,
            SEVERITY,
            ev.span,
            f"{task.base}: the sorted row holds {width} records but up to {chain.finite_text} candidates "
            f"can be finite (at {where}); candidates {width}..{chain.finite - 1} are not in the row, so the "
            f"top-k never sees them. Wrong for {bad_at}{good_at}",
            fix=f"widen the row to at least {worst} records, or cap the candidates at {width} with an assert",
        )
    run, prefix = chain.run, ev.detail["prefix"]
    reasons = []
    if min(chain.finite, chain.records) > run:
        reasons.append(
            f"the row may hold up to {chain.finite_text} finite candidates (at {where}), but "
            f"{chain.chain_text} yields sorted runs of {run} records; the top-k reads columns "
            f"[0, {prefix}) = run 0 only, so candidates {run}..{chain.finite - 1} are never compared"
        )
    if prefix > 2 * run:
        reasons.append(
            f"the top-k reads columns [0, {prefix}) but {chain.chain_text} sorts only runs of {run} "
            f"records ({2 * run} columns): columns {2 * run}..{prefix - 1} belong to other runs (at {where})"
        )
    need = max(max(e.chain.finite, (e.detail["prefix"] + 1) // 2) for _, e, _ in fails)
    stages = needed_stages(chain, need)
    after = f"mrgsort(block_len={chain.stages[-1]})" if chain.stages else "sort32"
    final = run * 4 ** len(stages)
    fix = (
        f"add {', '.join(f'mrgsort(block_len={bl})' for bl in stages)} after {after} "
        f"(runs of {min(final, chain.records)} records)"
        if stages
        else "read at most the first run"
    )
    related = tuple((s, f"mrgsort stage {i + 1}") for i, s in enumerate(chain.stage_spans))
    return finding(
        CODE,
        SEVERITY,
        ev.span,
        f"{task.base}: " + "; ".join(reasons) + f". {chain.chain_text} is correct only while at most "
        f"{run} candidates can be finite and the read stays within {2 * run} columns: wrong for {bad_at}"
        f"{good_at}",
        fix=fix,
        related=((chain.sort_span, "sort32"), *related),
    )
