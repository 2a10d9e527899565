"""R505: blocks of one SPMD grid write elements that another block of the grid also touches.

## What it catches

In a task with `spmd(N)`, a plain write (or a non-atomic `+=`) by one block to elements
that a *different* block of the same task writes or reads, with no `barrier` between the
two accesses. The blocks of a grid share one TaskId: no edge can order them, and the
runtime dispatches them on different cores in any order and in waves. Atomic adds are not
reported here (integer atomics commute; float atomics are N201); windows and signal cells
are left to the protocol rules.

Only overlaps that certainly happen at the layer's parameter point are reported: regions
indexed by data (`read(...)`) and accesses under data-dependent conditions are skipped,
since they are usually a scatter that is disjoint by construction, and so are the accesses a
PyPTO file's reader takes as a whole tensor because it cannot see which elements a block
touches: the arguments of an extern kernel (hand-written C++ whose blocks split the work in
ways the reader cannot see) or of an op it does not know, and stores at offsets it cannot
evaluate (each with a P001 note). Blocks that all store one constant into the same element
(`pl.write(flag, [b], 1)` from every block of a row) leave that constant whatever the order,
and are not reported either. A grid too large to list block by block (its blocks times
the task's accesses past the analysis budget, 60,000 executions) is examined on its first
and last 64 blocks: the overlaps of neighbouring blocks, and of every block when the region
does not depend on `block`, are found; a pattern that pairs only distant blocks is not.
Before listing anything, two accesses whose regions move with the block by offsets at least as
far apart as each block's span (``block * TILE``, the digits ``block // S`` and ``block % S``
of a 2-D tiling or a split-K partial) are proven apart for every block of any grid
(``lowering.checks.block_stride``).

## Why it breaks on the device

Two blocks writing one element leave the value of whichever finishes last; a non-atomic
`+=` from several blocks loses updates (each block reads the old value, adds, and stores).
A block reading what another block writes sees the old or the new value depending on the
schedule. The result changes with the number of cores, the wave a block lands in and the
early-dispatch state, so it can pass on the simulator and fail on the device.

## Example

    task rowsum spmd(4) on aiv {
      total[0:1, :] += col_sum(x[block * 16 : block * 16 + 16, :])     # R505: lost updates
    }

## Use instead

    task rowsum spmd(4) on aiv { partial[block : block + 1, :] = col_sum(x[block * 16 : block * 16 + 16, :]) }
    task reduce on aiv after rowsum {
      let acc = partial[0:1, :]
      for s in range(1, 4) { acc = acc + partial[s : s + 1, :] }
      total[0:1, :] = acc
    }

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering import body as ir_body
from lowering.checks import describe
from lowering.checks.access_instances import (
    can_be_certain,
    distinct,
    first_overlap,
    grid_sample,
    hits,
    hull,
    hulls_meet,
    intersection_text,
    local_tensor,
    widened_hits,
)
from lowering.checks.block_stride import blocks_apart
from lowering.checks.rule import CheckContext, finding
from lowering.checks.translation import shift_key
from lowering.ir import Access, Graph, Task
from lowering.source import Diagnostic, Span
from lowering.symbolic import free_symbols

CODE = "R505"
NAME = "overlapping_block_writes"
FAMILY = "races"
SEVERITY = "error"
SUMMARY = "blocks of one spmd grid write elements another block of the grid writes or reads"


def _certain(graph: Graph, task, access: Access, sample) -> list:
    """The exact, unconditional executions of ``access``, one per block and phase."""
    found = hits(graph, task, access, sample)
    return distinct([h for h in found if h.exact and not h.maybe], key=lambda h: (h.block, h.phase))


def _at(tensor: str, span: Span) -> tuple:
    """A store and its write access start at the same place (the access span ends with the target)."""
    return tensor, span.file, span.line, span.col


def _constant_stores(task) -> dict[tuple, object]:
    """A plain store of ``task`` (by :func:`_at`) -> the scalar constant it writes in every
    block and iteration (None for a place that stores anything else)."""
    out: dict[tuple, object] = {}
    for s in ir_body.nested_stmts(task.body):
        if not isinstance(s, ir_body.StoreS) or s.mode != "write":
            continue
        v = s.value
        if isinstance(v, ir_body.IntV) and not free_symbols(v.expr):
            value: object = ("int", v.expr, v.type)
        elif isinstance(v, ir_body.FloatV):
            value = ("float", v.value, v.type)
        else:
            value = None
        key = _at(s.tensor, s.span)
        out[key] = value if out.get(key, value) == value else None
    return out


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    shifted: dict[tuple, bool] = {}  # shift_key -> whether blocks may meet, constants aside
    verdicts: dict[tuple, list[tuple[int, int, tuple, bool]]] = {}
    for task in graph.tasks:
        if task.blocks < 2:
            continue
        accs = [
            a
            for a in task.accesses
            if a.mode != "anchor" and not a.opaque and local_tensor(graph.tensors[a.tensor])
        ]
        # Tasks of one kernel at other offsets (the experts of a layer) share a verdict; only
        # one with overlapping blocks is judged for itself, with its stored constants.
        moved = shift_key(graph, task, accs)
        if moved is not None:
            moved = (task.blocks, grid_sample(task), tuple(b.order for b in task.barriers), moved)
            if moved not in shifted:
                shifted[moved] = next(_overlaps(graph, task, accs, {}), None) is not None
            if not shifted[moved]:
                continue
        constants = _constant_stores(task)
        key = _signature(graph, task, accs, constants)
        found = verdicts.get(key)
        if found is None:
            found = verdicts[key] = list(_overlaps(graph, task, accs, constants))
        for w, other, pair, rmw in found:
            yield _finding(graph, task, accs[w], accs[other], pair, rmw)


def _signature(graph: Graph, task: Task, accs: list[Access], constants: dict) -> tuple:
    """Everything the verdict on a task depends on, its tensors named by first use: the tasks
    one kernel is instantiated into with the same constants (the layers of a model, thousands
    of tasks) share it, and are judged once."""
    first: dict[str, int] = {}
    return (
        task.blocks,
        grid_sample(task),  # the blocks examined of a grid too large to list
        tuple(b.order for b in task.barriers),
        tuple(
            (
                first.setdefault(a.tensor, len(first)),
                graph.tensors[a.tensor].dims,
                a.mode,
                a.dtype,
                a.region,
                a.loops,
                a.conds,
                a.peer,
                a.span,
                a.order,
                constants.get(_at(a.tensor, a.span)),
            )
            for a in accs
        ),
    )


def _overlaps(
    graph: Graph, task: Task, accs: list[Access], constants: dict
) -> Iterator[tuple[int, int, tuple, bool]]:
    """(index of the write, index of the other access, the overlapping pair of executions,
    read-modify-write): the first overlap between blocks of each written tensor."""
    reported: set[str] = set()
    # a read-modify-write (`+=` without atomic) is a read and a write of one statement
    rmw = {(a.tensor, a.span) for a in accs if a.mode == "read"} & {
        (a.tensor, a.span) for a in accs if a.mode == "write"
    }
    sample = grid_sample(task)
    for i, w in enumerate(accs):
        if w.mode != "write" or w.tensor in reported or not can_be_certain(graph, w):
            continue  # an access that depends on data has no certain execution to compare
        boxes_w = hw = None
        for j, other in enumerate(accs):
            if other.tensor != w.tensor or not can_be_certain(graph, other):
                continue
            if blocks_apart(graph, w, other, task.blocks):
                continue  # a stride per block keeps the blocks apart: nothing to list
            if boxes_w is None:
                boxes_w = widened_hits(graph, task, w, sample)
            boxes_o = boxes_w if other is w else widened_hits(graph, task, other, sample)
            if not _block_hulls_meet(boxes_w, boxes_o):
                continue  # each block keeps to a box no other block's accesses enter
            if hw is None:
                hw = _certain(graph, task, w, sample)
            ho = hw if other is w else _certain(graph, task, other, sample)
            pair = first_overlap(
                hw, ho, accept=lambda a, b: a.block != b.block and a.phase == b.phase and a.rank == b.rank
            )
            if pair is None:
                continue
            same = constants.get(_at(w.tensor, w.span))
            if other.writes and same is not None and constants.get(_at(other.tensor, other.span)) == same:
                continue  # every block leaves the same constant there
            reported.add(w.tensor)
            yield i, j, pair, (w.tensor, w.span) in rmw
            break


def _block_hulls_meet(hw: list, ho: list) -> bool:
    """Whether the bounding box of one block's hits in ``hw`` meets that of another block's in
    ``ho`` (same rank). A cheap necessary condition for an overlap between blocks: tiled kernels
    give each block its own box, and thousands of loop iterations per block need not be
    compared pairwise once the boxes are apart."""
    boxes: list[tuple[tuple, int, int, int]] = []  # (hull, block, rank, side)
    for side, found in ((0, hw), (1, ho)):
        by_block: dict[tuple[int, int], list] = {}
        for h in found:
            if h.block < 0:
                return True  # the grid was taken whole: no box per block to compare
            by_block.setdefault((h.block, h.rank), []).append(h)
        boxes += [(hull(group), block, rank, side) for (block, rank), group in by_block.items()]
    boxes.sort(key=lambda b: b[0][0][0])
    active: list[tuple[tuple, int, int, int]] = []
    for box in boxes:
        lo = box[0][0][0]
        active = [a for a in active if a[0][0][1] > lo]
        for other in active:
            if (
                other[1] != box[1]
                and other[2] == box[2]
                and other[3] != box[3]
                and hulls_meet(other[0], box[0])
            ):
                return True
        active.append(box)
    return False


def _finding(graph: Graph, task, w: Access, other: Access, pair, rmw: bool) -> Diagnostic:
    hw, ho = pair
    b1, b2 = sorted((hw.block, ho.block))
    where = w.tensor + intersection_text(hw.region, ho.region)
    head = f"{task.name} ({describe.grid(task)}): "
    if rmw:
        what = (
            f"blocks {b1} and {b2} both do a non-atomic `+=` on {where}; each reads the old "
            f"value and stores its sum, so all but one update are lost, depending on the schedule"
        )
        fix = "write per-block partials (index the region by `block`) and sum them in a task after this one"
    elif other.writes:
        what = (
            f"blocks {b1} and {b2} both write {where}; the blocks of one grid are never "
            f"ordered, so the value left is the last block's to finish"
        )
        fix = "index the written region by `block` so blocks write disjoint elements"
    else:
        what = (
            f"block {ho.block} reads {where} that block {hw.block} writes; the blocks of one grid are "
            f"never ordered, so it reads the old or the new value depending on the schedule"
        )
        fix = f"move the read into a task `after {task.name}`, or separate the phases with a `barrier` (sync_start)"
    related = ((other.span, f"the access of block {ho.block}"),) if other.span != w.span else ()
    return finding(CODE, SEVERITY, w.span, head + what, fix=fix, related=related)
