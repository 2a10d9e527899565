"""Programs for the MPI tests, loaded by ``driver.py`` as ``programs.py:NAME``.

Most are for 2 ranks, one of which goes wrong or is late while its peer waits for it: rank 0
waits for a notify that rank 1 sends after its ``work`` block, and rank 1's ``work`` raises,
livelocks, never returns (interruptibly or not), or takes 100 time units (``late_notify``;
in ``late_notify_seen_late`` rank 0 also dawdles a second of wall time before its wait, so
the notify is already there when it looks). ``set_and_eq`` exercises the signal operations
the layers use besides ``+= 1`` and ``>=``.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from runtime import watchdog
from runtime.program import Program, TaskSpec, TensorSpec

#: Ranks ``set_and_eq`` has room for.
SET_AND_EQ_RANKS = 4


def _raises(ctx):
    if ctx.rank == 1:
        raise ValueError("boom on rank 1")


def _livelocks(ctx):
    while ctx.rank == 1:
        yield  # a free preemption point, forever: only the watchdog stops it


def _never_returns(ctx):
    until = time.monotonic() + 30.0  # bounded, so a broken test cannot hang CI forever
    while ctx.rank == 1 and time.monotonic() < until:
        pass


def _never_returns_held(ctx):
    """A kernel the watchdog cannot interrupt (as if stuck inside one long C call)."""
    with watchdog.held():
        _never_returns(ctx)


def _notify(ctx):
    if ctx.rank == 1:
        ctx.notify("sig", 0, 0, 1)


def _wait(ctx):
    if ctx.rank == 0:
        yield ctx.wait("sig", 0, "ge", 1)


def _program(name: str, work, cost: int = 1) -> Program:
    return Program(
        name,
        (TensorSpec("sig", (1,), "int32", "signal"),),
        (),
        (
            TaskSpec("work", "aiv", 1, work, cost=cost, predicate=lambda mem: mem.rank == 1),
            TaskSpec("notify", "aiv", 1, _notify, deps=(0,)),
            TaskSpec("wait", "aiv", 1, _wait),
        ),
    )


def kernel_error() -> Program:
    return _program("kernel_error", _raises)


def livelock() -> Program:
    return _program("livelock", _livelocks)


def never_returns() -> Program:
    return _program("never_returns", _never_returns)


def never_returns_held() -> Program:
    return _program("never_returns_held", _never_returns_held)


def late_notify() -> Program:
    return _program("late_notify", lambda ctx: None, cost=100)


def _dawdles_on_rank_0(ctx):
    if ctx.rank == 0:
        time.sleep(1.0)  # wall time only: rank 1's notify (simulated t=101) lands meanwhile


def late_notify_seen_late() -> Program:
    work, notify, wait = late_notify().tasks
    dawdle = TaskSpec("dawdle", "aiv", 1, _dawdles_on_rank_0, predicate=lambda mem: mem.rank == 0)
    return Program(
        "late_notify_seen_late", late_notify().tensors, (), (work, notify, dawdle, replace(wait, deps=(2,)))
    )


def _send_and_flag(ctx):
    """To every peer: a row of data, then Set its flag to 7 and to 100 + rank, then -1 and +3
    on its count."""
    for dst in range(ctx.nranks):
        if dst != ctx.rank:
            ctx.peer("box", dst)[ctx.rank, :] = ctx.rank * 10 + np.arange(4, dtype=np.float32)
            ctx.notify("flag", ctx.rank, dst, 7, op="set")
            ctx.notify("flag", ctx.rank, dst, 100 + ctx.rank, op="set")
            ctx.notify("count", 0, dst, -1)
            ctx.notify("count", 0, dst, 3)


def _wait_and_copy(ctx):
    """Eq waits: each peer's flag at its value, the count at its final value (it passes through
    2 (n - 1) only once every peer's -1 and +3 have landed); then copy what arrived."""
    for src in range(ctx.nranks):
        if src != ctx.rank:
            yield ctx.wait("flag", src, "eq", 100 + src)
    yield ctx.wait("count", 0, "eq", 2 * (ctx.nranks - 1))
    ctx.t("seen")[...] = ctx.t("box")
    ctx.t("cells")[: ctx.nranks] = ctx.t("flag")[: ctx.nranks]
    ctx.t("cells")[SET_AND_EQ_RANKS] = ctx.t("count")[0]


def set_and_eq() -> Program:
    """Remote stores, Set and negative Add notifies, Eq waits, for up to 4 ranks."""
    n = SET_AND_EQ_RANKS
    return Program(
        "set_and_eq",
        (
            TensorSpec("box", (n, 4), "float32", "window"),
            TensorSpec("flag", (n,), "int32", "signal"),
            TensorSpec("count", (1,), "int32", "signal"),
            TensorSpec("seen", (n, 4), "float32", "output"),
            TensorSpec("cells", (n + 1,), "int32", "output"),
        ),
        (),
        (
            TaskSpec("send", "aiv", 1, _send_and_flag),
            TaskSpec("recv", "aiv", 1, _wait_and_copy),
        ),
    )


def _note_rounds(ctx):
    ctx.t("seen")[ctx.round] = (ctx.scalar("epoch"), ctx.scalar("dispatch"), ctx.scalar("fixed"))


def round_scalars() -> Program:
    """Each round writes its ``epoch``, ``dispatch`` (a round scalar) and ``fixed`` (a request
    scalar) into row ``round`` of ``seen``; for 2 rounds."""
    return Program(
        "round_scalars",
        (TensorSpec("seen", (2, 3), "int32", "output"),),
        ("epoch", "dispatch", "fixed"),
        (TaskSpec("note", "aiv", 1, _note_rounds),),
    )
