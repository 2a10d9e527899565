"""R506: blocks of one SPMD grid write rows chosen by data, and the lint assumes them distinct.

## What it catches

In a task with `spmd(N)`, a plain write (or a non-atomic `+=`) whose region is indexed by a
value read from a tensor (a page table, a slot mapping, a routing index), where the blocks
could write the same elements if two of them read the same value. R505 reports only
overlaps that certainly happen; it cannot see the values of a table, so it skips these
writes and the layer is correct only if the table maps every block to its own rows. This
note names that assumption and the tensor it rests on, once per task and written tensor:
rows from `page_table` must be distinct. A write whose other dimensions already keep the
blocks apart (a column band indexed by `block`) is not reported.

## Why it breaks on the device

If two blocks read the same row index, they write the same elements with no order between
them: the value left is the last block's to finish, and a `+=` loses updates. The result
changes with the schedule. A test input whose table is not injective (a page table
`(17 * b + 3) % 68` folds 64 pages onto 4) passes under an in-order schedule and fails under
others; real page tables are injective, and the kernel is right only for those.

## Example

    task state_update spmd(T / 16) on aiv {
      for i in range(16) {
        let r = read(slot_mapping[0, block * 16 + i])
        state[r : r + 1, :] = rows[block * 16 + i : block * 16 + i + 1, :]   # R506
      }
    }

## Use instead

Keep the write and state the input contract where the layer is written, with the reason:

    state[r : r + 1, :] = rows[...]   # dslc: ignore[R506] slot_mapping comes from an injective page table

or, when the rows do not need to come from data, index the write by `block`.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.access_instances import distinct, first_overlap, hits, local_tensor
from lowering.checks.block_stride import blocks_apart
from lowering.checks.races.data_rows import data_symbols
from lowering.checks.races.data_rows import sources as task_sources
from lowering.checks.rule import CheckContext, finding
from lowering.checks.translation import shift_key
from lowering.ir import Access, Graph, Task
from lowering.source import Diagnostic

CODE = "R506"
NAME = "data_indexed_rows_assumed_distinct"
FAMILY = "races"
SEVERITY = "note"
SUMMARY = "blocks of one spmd grid write rows read from a tensor; the lint assumes those rows distinct"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    meets: dict[tuple, bool] = {}  # a write at other constant offsets meets across blocks alike
    for task in graph.tasks:
        if task.blocks < 2:
            continue
        sources: dict[str, set[str]] | None = None
        by_tables: dict[tuple[str, ...], list[Access]] = {}
        for w in task.accesses:
            if w.mode != "write" or not local_tensor(graph.tensors[w.tensor]):
                continue
            names = data_symbols(w)
            if not names:
                continue
            moved = shift_key(graph, task, [w])
            key = None if moved is None else (task.blocks, tuple(b.order for b in task.barriers), moved)
            meet = meets.get(key) if key is not None else None
            if meet is None and blocks_apart(graph, w, w, task.blocks):
                meet = False  # the other dimensions keep the blocks apart, whatever the table holds
            if meet is None:
                # data-indexed dimensions span the whole extent here: an overlap across blocks
                # means only the table's values keep the blocks apart
                found = distinct(hits(graph, task, w), key=lambda h: (h.block, h.phase))
                pair = first_overlap(
                    found, accept=lambda a, b: a.block != b.block and a.phase == b.phase and a.rank == b.rank
                )
                meet = pair is not None
                if key is not None:
                    meets[key] = meet
            if not meet:
                continue
            if sources is None:
                sources = task_sources(task)
            tables = tuple(sorted({t for n in names for t in sources.get(n, ())}))
            by_tables.setdefault(tables, []).append(w)
        for tables, writes in by_tables.items():
            yield _finding(task, writes, tables)


def _finding(task: Task, writes: list[Access], tables: tuple[str, ...]) -> Diagnostic:
    origin = " and ".join(f"`{t}`" for t in tables) if tables else "data read at run time"
    written = ", ".join(dict.fromkeys(w.tensor for w in writes))
    message = (
        f"{task.name} ({describe.grid(task)}): the rows of {written} written here come from {origin}; "
        f"R505 cannot check rows chosen by data and assumes the blocks write distinct rows: "
        f"rows from {origin} must be distinct"
    )
    fix = (
        f"make {origin} map each block to its own rows (an injective table) and say so with "
        f"`# dslc: ignore[{CODE}] <why the rows are distinct>`, or index the write by `block`"
    )
    related = tuple((w.span, f"also writes {w.tensor}") for w in writes[1:] if w.span != writes[0].span)
    return finding(CODE, SEVERITY, writes[0].span, message, fix=fix, related=related)
