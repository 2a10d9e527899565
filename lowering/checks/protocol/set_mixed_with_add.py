"""D111: Set (``notify ... = v``) and AtomicAdd (``+=``) on the same signal cells.

## What it catches

A ``notify sig[i] @ peer = v`` with a non-zero (or non-constant) ``v`` on a cell that some
``notify ... += n`` also writes. Cells are matched exactly at the default parameter point
(every rank, block and iteration); when they depend on data, any Set and any add on the
same signal are taken to meet. A Set of the constant 0 is a clear, checked by D113 instead.

## Why it breaks on the device

TNOTIFY with Set is a plain store into the peer's cell; AtomicAdd is a read-modify-write.
Their order across ranks is not defined: a Set that lands after some adds erases their
credits (the wait hangs), one that lands before them is counted on top of (the wait
releases early). pypto's protocol rule is never to mix the two on the same cells
(docs/runtime-semantics.md §7.2, §9 D7, §21.1).

## Example

    task push spmd(N_LOCAL) on aiv { ...; notify ready[rank] @ dst += 1 }
    task meta on aiv { ...; notify ready[rank] @ dst = 1 }          # same cells, Set

## Use instead

    task meta on aiv { ...; notify ready[rank] @ dst += 1 }         # one op on the counter
    # (and wait for the new per-epoch count), or give the flag its own signal

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.index import notifiers
from lowering.checks.protocol import instances
from lowering.checks.protocol.instances import Uncountable
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "D111"
NAME = "set_mixed_with_add"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "Set and AtomicAdd notifies on the same signal cells"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    reported: set = set()
    signals = sorted({op.signal for t in graph.tasks for op in t.notifies if op.op == "set"})
    for signal in signals:
        add_ops = [(t, op) for t, op in notifiers(graph, signal) if op.op == "add"]
        if not add_ops:
            continue
        try:
            add_cells: dict[tuple, str] = {}
            for d in instances.deposits(graph, ctx, signal, env):
                add_cells.setdefault((d.dst, d.cell), d.task)
            sets = instances.set_writes(graph, ctx, signal, env)
            hits = [
                (s, add_cells[(s.dst, s.cell)]) for s in sets if not s.clear and (s.dst, s.cell) in add_cells
            ]
            exact = True
        except Uncountable:
            first_add = add_ops[0][0].name
            hits = [
                (instances.SetWrite(t.name, op, 0, 0, (), False), first_add)
                for t, op in notifiers(graph, signal)
                if op.op == "set" and not instances.is_clear(op)
            ]
            exact = False
        for s, adder in hits:
            if s.op.span in reported:
                continue
            reported.add(s.op.span)
            where = (
                f"cell {instances.cell_text(signal, s.cell)} on rank {s.dst}"
                if exact
                else f"cells of {signal}"
            )
            adder_op = next(op for t, op in add_ops if t.name == adder)
            yield finding(
                CODE,
                SEVERITY,
                s.op.span,
                f"{s.task} sets {where} to {instances.expr_text(s.op.value)} (Set) while {adder} adds to it "
                f"(`+= {instances.expr_text(adder_op.value)}`, AtomicAdd): their order across ranks is not defined, "
                f"so the Set erases credits already added or is counted on top of them -- waits on {signal} "
                f"hang or release early",
                fix=f"use `+=` for every notify on {signal}, or give the flag a signal of its own",
                related=((adder_op.span, "the AtomicAdd notify"),),
            )
