"""A zero ``pl.write`` into a signal cell is that cell's clear.

PyPTO has no "clear" op: a program resets its own signal cells by storing zero into the window
that backs them, e.g. a task ordered after the round's last wait that runs
``pl.write(arrived, [src, 0], pl.cast(0, pl.INT32))`` for every source (the "program-end clear"
of docs/runtime-semantics.md §7.4: with ``reset_persistent_windows=False`` the
program manages its windows itself). A cell lives in this rank's window, so the store is the
DSL's ``notify sig[i] @ rank = 0``: this module turns every such store -- of a literal zero, to
a tensor the program uses as a signal -- into that notify, so the protocol rules judge the
clear (D113: ordered after a wait that saw the full count) and the counters it resets (D103,
D113 take a cleared cell as starting every round at zero). Any other store into a signal
tensor stays a store.
"""

from __future__ import annotations

from lowering import body as ir_body
from lowering import ir
from lowering.passes.walk import map_leaf_stmts
from lowering.symbolic import Const, Sym

RANK = Sym("rank", "rank")


def _zero(value: object) -> bool:
    if isinstance(value, ir_body.IntV):
        return value.expr == Const(0)
    return isinstance(value, ir_body.FloatV) and value.value == 0.0


def _clear_of(store: ir_body.StoreS) -> ir_body.NotifyS | None:
    if store.mode != "write" or not _zero(store.value) or not all(r.point for r in store.region):
        return None
    return ir_body.NotifyS(
        store.tensor, tuple(r.start for r in store.region), RANK, "set", Const(0), store.span
    )


def _with_clears(stmts: tuple, signals: set[str]) -> tuple[tuple, dict]:
    """``stmts`` with their clears of ``signals`` as notifies, and those notifies by span."""
    clears: dict = {}

    def as_clear(s):
        notify = _clear_of(s) if isinstance(s, ir_body.StoreS) and s.tensor in signals else None
        if notify is None:
            return s
        clears[s.span] = notify
        return notify

    return map_leaf_stmts(stmts, as_clear), clears


def zero_writes_as_clears(tasks: list[ir.Task], tensors: dict[str, ir.Tensor]) -> None:
    """Rewrite, in place, each task's zero stores into signal cells as ``= 0`` notifies on its rank."""
    signals = {name for name, t in tensors.items() if t.kind == "signal"}
    if not signals:
        return
    for task in tasks:
        if not any(a.tensor in signals and a.mode == "write" for a in task.accesses):
            continue
        body, clears = _with_clears(task.body, signals)
        if not clears:
            continue
        kept, added = [], []
        for a in task.accesses:
            notify = clears.get(a.span) if a.tensor in signals and a.mode == "write" else None
            if notify is None:
                kept.append(a)
                continue
            added.append(
                ir.SignalOp(
                    "notify", a.tensor, notify.index, a.loops, a.conds, a.span, a.order,
                    peer=RANK, op="set", value=Const(0),
                )
            )  # fmt: skip
        task.body = body
        task.accesses = tuple(kept)
        task.signals = tuple(sorted((*task.signals, *added), key=lambda op: op.order))
