"""Programs for the MPI tests: one rank goes wrong, or is late, while its peer waits for it.

Each is a function returning a :class:`Program` for 2 ranks: rank 0 waits for a notify that
rank 1 sends after its ``work`` block, and rank 1's ``work`` raises, livelocks, never
returns, or takes 100 time units. Loaded by ``driver.py`` as ``programs.py:NAME``.
"""

from __future__ import annotations

import time

from runtime.program import Program, TaskSpec, TensorSpec


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


def late_notify() -> Program:
    return _program("late_notify", lambda ctx: None, cost=100)
