"""S302: an mrgsort stage whose block_len breaks the ISA or the run-length chain.

## What it catches

An ``mrgsort(s, block_len)`` on a row that ``sort32`` sorted, where for some admissible
parameter value:

- ``block_len`` is not a multiple of 64 (the ISA constraint; ``block_len`` counts columns,
  two per record, so 64 columns = 32 records = one sort32 run);
- the row's columns are not a multiple of ``4 * block_len`` (each repeat merges 4 lists), or
  the repeats exceed 255;
- ``block_len`` is not the previous run length in columns: after sort32 the runs are 64
  columns, after mrgsort(64) 256, after mrgsort(256) 1024, ... (docs/runtime-semantics.md §11.2, R6
  (a)).

## Why it breaks on the device

The merge takes the largest head of 4 lists at each step; that is a merge only when each
list is already sorted. A ``block_len`` longer than the current runs merges lists that are
not sorted and the row comes out unsorted; a shorter one merges pieces of one run and leaves
the runs as they were (a wasted stage, and the following stages are then off by one). An
ISA violation is rejected by the instruction or, on some toolchains, silently processes a
truncated row.

## Example

    let s = sort32(row, ramp[0 : 1, :])     # runs of 32 records = 64 columns
    s = mrgsort(s, 128)                     # merges lists of 128 columns: not sorted

## Use instead

    s = mrgsort(s, 64)                      # runs of 128 records (256 columns)
    s = mrgsort(s, 256)                     # runs of 512 records (1024 columns)

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
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "S302"
NAME = "mrgsort_block_len_invalid"
FAMILY = "sort"
SEVERITY = "error"
SUMMARY = "an mrgsort block_len breaks the ISA constraints or is not the previous run length"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    if not any("mrgsort" in t.ops or "mrgsort_merge" in t.ops for t in graph.tasks):
        return
    fails: dict[tuple, list] = defaultdict(list)
    for point in graph.admissible_points():
        facts = facts_for(ctx, point, "sort")
        for task in graph.tasks:
            for ev in facts[task.name].sorts:
                if ev.kind in ("isa", "order", "merge"):
                    fails[(ev.span, ev.kind)].append((point, ev, task))
    for (span, kind), items in fails.items():
        point, ev, task = items[0]
        chain, bl = ev.chain, ev.detail["bl"]
        ranged = any(p.domain is not None for p in graph.params.values())
        at = (
            f" (at {point_text(graph, point)}; wrong for {points_text(graph, [p for p, _, _ in items])})"
            if ranged
            else ""
        )
        want = 2 * chain.run
        if kind == "merge":
            d = ev.detail
            yield finding(
                CODE,
                SEVERITY,
                span,
                f"{task.base}: mrgsort of {d['operands']} operands (format 2) merges lists that are not "
                f"sorted: after {chain.chain_text} an operand of {d['records']} records holds runs of only "
                f"{d['run']}, so the merged row comes out unsorted{at}",
                fix="sort each operand into one run first (more format-1 stages), or slice whole runs",
                related=((chain.sort_span, "sort32"),),
            )
            continue
        if kind == "isa":
            why = "; ".join(ev.detail["why"])
            yield finding(
                CODE,
                SEVERITY,
                span,
                f"{task.base}: mrgsort(block_len={bl}) on a row of {2 * chain.records} columns violates the "
                f"ISA: {why}{at}",
                fix=_isa_fix(chain, bl, want),
            )
            continue
        effect = (
            "the lists it merges are not sorted, so the row comes out unsorted"
            if bl > want
            else "it merges pieces of one sorted run: the stage does not lengthen the runs"
        )
        yield finding(
            CODE,
            SEVERITY,
            span,
            f"{task.base}: mrgsort(block_len={bl}) follows {chain.chain_text}, whose sorted runs are "
            f"{chain.run} records = {want} columns; each stage must merge the previous runs "
            f"(block_len={want}), and {effect}{at}",
            fix=f"use mrgsort(block_len={want})",
            related=((chain.sort_span, "sort32"),),
        )


def _isa_fix(chain, bl: int, want: int) -> str:
    if want >= 2 * chain.records:
        return "drop this stage: the row is already one sorted run"
    if bl == want:
        return (
            f"pad the row to a multiple of {4 * bl} columns ({2 * bl} records), or stop the chain at "
            f"runs of {chain.run} records"
        )
    return f"use block_len={want}: the current runs of {chain.run} records, in columns"
