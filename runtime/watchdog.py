"""The wall-clock watchdog of a simulation: it stops a run that takes too long, even inside a
kernel body that never yields, and says how far the run got and what it was doing.

On the main thread (the ``dslc`` CLI, a plain script) the deadline is a ``SIGALRM`` timer
whose handler raises :class:`Expired` -- a ``BaseException``, so neither a kernel nor the
engine's ``except Exception`` can swallow it -- wherever the interpreter is, a tight loop in a
generated kernel included. Elsewhere (a thread, a platform without ``setitimer``) the engine
polls the clock every 1024 kernel steps, which cannot interrupt a body that never yields.

An engine that must stay able to talk to its peers after a timeout (one MPI process of a run,
``runtime.mpi.engine``) arms the alarm with a ``when`` test -- "a kernel is running" -- and
its MPI operations are :func:`held`: an alarm that comes at another moment is retried every
:data:`RETRY_SECONDS`, so it never cuts an MPI operation in half (the run still has to stop
its peers through MPI) and still lands in a kernel that never yields.

The report tells a slow run from a stuck one: a kernel that has been in its body for most of
the budget, a run that kept finishing blocks until the end (merely slow: raise the timeout or
shrink the layer), or one where no block finished for a long time while kernels kept being
resumed (a kernel that yields forever, or a livelock).
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class Expired(BaseException):
    """Raised by the alarm handler at the deadline (caught by the engine, never by kernels)."""


NO_DEADLINE = 1e9  # seconds (31 years): a longer timeout, or inf, arms no timer (setitimer overflows)
RETRY_SECONDS = 0.05  # an alarm that came at a moment it may not interrupt fires again this much later

_held = 0  # depth of :func:`held` blocks being run


@contextmanager
def held() -> Iterator[None]:
    """The alarm does not interrupt the block (it is retried after it)."""
    global _held
    _held += 1
    try:
        yield
    finally:
        _held -= 1


def uninterrupted(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` run as a :func:`held` block."""

    @functools.wraps(fn)
    def run(*args, **kwargs) -> T:
        with held():
            return fn(*args, **kwargs)

    return run


@contextmanager
def alarm(seconds: float, when: Callable[[], bool] | None = None) -> Iterator[bool]:
    """Raise :class:`Expired` after ``seconds`` of wall clock; yields whether the alarm is armed.

    It interrupts only where ``when()`` holds (if given) and no :func:`held` block runs;
    elsewhere it is retried every :data:`RETRY_SECONDS`."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or seconds <= 0 or seconds >= NO_DEADLINE:  # timeout=inf: nothing to arm
        yield False
        return

    def fire(_signum, _frame):
        if not _held and (when is None or when()):
            raise Expired
        signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Progress:
    """How far a stopped run got (``SimulationTimeout.progress``)."""

    elapsed: float  # seconds of wall clock
    blocks_done: int
    blocks_total: int
    tasks_done: int
    tasks_total: int
    rounds_done: int
    rounds: int
    sim_time: int
    steps: int
    idle_for: float  # seconds since the last block finished
    current: str | None  # the block being run when the run stopped
    current_for: float  # seconds it had been running without returning to the engine
    last: str | None = None  # the block resumed last

    def verdict(self, timeout: float) -> str:
        """Why the run did not finish, in words that do not blame a livelock on a slow run."""
        if self.current is not None and self.current_for >= 0.5 * timeout:
            return (
                f"{self.current} had been running its kernel for {self.current_for:.1f} s without finishing "
                "or yielding: a very long (or endless) loop in its body"
            )
        if self.blocks_done and self.idle_for <= 0.1 * timeout:
            return (
                "the run was still making progress (a block finished "
                f"{self.idle_for:.2f} s before the deadline): it is slow, not stuck; raise --timeout, "
                "or simulate at smaller sizes with --set"
            )
        last = f" (the last block resumed: {self.last})" if self.last else ""
        return (
            f"no block finished in the last {self.idle_for:.1f} s while kernels kept being resumed{last}: "
            "a kernel that yields forever (a wait polled in a loop) or a livelock"
        )

    def summary(self) -> str:
        share = f" ({self.blocks_done / self.blocks_total:.1%})" if self.blocks_total else ""
        return (
            f"{self.blocks_done:,} of {self.blocks_total:,} blocks finished{share}, "
            f"{self.tasks_done:,} of {self.tasks_total:,} task instances complete, "
            f"round {min(self.rounds_done + 1, self.rounds)} of {self.rounds}, "
            f"simulated time {self.sim_time:,}, {self.steps:,} kernel steps"
        )
