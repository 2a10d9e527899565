"""R503: a write that had to register as InOut (or a manual_dep read that had to be chained).

## What it catches

Edges the runtime did not add because of how an argument registered
(docs/runtime-semantics.md §3), where a later reader depends on them
(docs/runtime-semantics.md §21.3 R16, §21.1 R8):

- **A pure `Out` write over an earlier write that is read back.** A write-only argument is
  OUTPUT_EXISTING unless the compiler promotes it to InOut (R-seq: under a `range` layer
  loop; R-prior: an earlier task *statement* wrote the tensor; R-enclosing: the tensor is an
  `inout` of the layer). An OUTPUT_EXISTING write looks up no earlier writer, so when an
  earlier, unordered task wrote the same elements (typically another instance of the same
  statement in a layer `parallel` loop) and a later task reads them back, that reader sees
  whichever write landed last. An Out over an earlier write that nobody reads back is R501.
- **A read of a `manual_dep` tensor with no path to its writer** (R8). A manual_dep tensor
  gets no inferred edges; its ordering rides only on the explicit chain. When an `after` is
  removed or re-anchored, the reader silently loses its producer.

The language derives directions from the task body, so the PyPTO form of R16 (`add_output`
on an argument the kernel also reads) cannot be written here: a task that reads a tensor
is always INPUT or INOUT on it.

## Why it breaks on the device

The reader is released as soon as the edges it has are satisfied. For the Out case it waits
for both producers (the entries of both are live) but the two writes race each other; for
manual_dep it waits for nothing and reads whatever the buffer holds. The pypto-lib GM round
trip registered with `add_output` instead of `add_inout` passed 16 runs of 20 and failed the
others with 507046; dropping `deps=[meta]` from `dispatch_wait` (#824) left the gather
reading `recv_meta_local` before the cumsum wrote it.

## Example

    output buf: f32[TILES * T + HALO, D]
    for i in parallel(TILES) {
      task pack[i] on aiv { buf[i * T : i * T + T + HALO, :] = ... }   # halos overlap, pure Out
    }
    task use on aiv { y[:, :] = buf[0 : TILES * T, :] }

## Use instead

    inout buf: f32[TILES * T + HALO, D]     # every write registers as InOut: pack[i] waits for pack[i - 1]

or run the writers in a `range` layer loop, or chain them with `after`. For manual_dep:
`task gather ... after cumsum`.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.races.conflicts import (
    MANUAL_DEP,
    OUT,
    Conflict,
    after_fix,
    call_alias,
    certainty,
    conflicts,
    grouped,
    instances_text,
    same_index,
)
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "R503"
NAME = "out_must_be_inout"
FAMILY = "races"
SEVERITY = "error"
SUMMARY = "a pure Out write over an earlier write that is read back, or a manual_dep read with no path to its writer"


def _mine(c: Conflict) -> bool:
    return (c.kind == "raw" and c.cause == MANUAL_DEP) or (
        c.kind == "waw" and c.cause == OUT and c.reader is not None
    )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    for group in grouped([c for c in conflicts(graph, ctx) if _mine(c) and call_alias(graph, c) is None]):
        c = group[0]
        t1, t2 = c.first.name, c.second.name
        severity, shown = certainty(group, SEVERITY, ctx.cache.setdefault("races.data_rows.sources", {}))
        if c.cause == MANUAL_DEP:
            yield finding(
                CODE,
                severity,
                c.b.span,
                f"{t2} reads {c.where} of manual_dep `{c.tensor}` that {t1} writes, but no chain of edges "
                f"leads from {t1} to {t2}: a manual_dep tensor gets no inferred edges, its ordering rides "
                f"only on `after`, so {t2} can read before the write lands{shown}{instances_text(group)}",
                fix=after_fix(c.first, c.second, same_index(group)),
                related=((c.a.span, f"the write of {t1}"),),
            )
            continue
        reader = c.reader.name if c.reader is not None else "a later task"
        yield finding(
            CODE,
            severity,
            c.b.span,
            f"{t2} writes {c.where} as a pure Out (OUTPUT_EXISTING) after {t1} wrote it, and {reader} reads "
            f"it back: an Out argument looks up no earlier writer, so {t2} takes no WAW edge on {t1} and "
            f"{reader} reads whichever write lands last{shown}{instances_text(group)}",
            fix=f"declare `{c.tensor}` inout so every write registers as InOut (or run the writers in a "
            f"`range` loop, or {after_fix(c.first, c.second, same_index(group))})",
            related=((c.a.span, f"the earlier write of {t1}"),),
        )
