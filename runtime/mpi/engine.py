"""One process's share of an MPI run: the engine over its hosted ranks, polling its peers.

The event loop is the in-process one (``runtime.scheduler.Engine``) with three additions:

* between block steps, every :data:`~runtime.mpi.control.POLL_SECONDS` of wall time, it looks
  at its stop cell and re-reads the cells its blocks spin on (which also gives MPI progress to
  peers' operations targeting this process);
* a wait on a cell another process changed resumes at ``max(now, clock)``, where the clock
  is the simulated time of the notify that changed it, whether the block spun on it or found
  it holding already (the notify came first in wall time, later in simulated time), so
  simulated time stays causal across processes (each process keeps its own clock);
* when nothing is runnable it takes part in the termination protocol
  (:class:`runtime.mpi.control.Control`) instead of declaring a deadlock on its own.
"""

from __future__ import annotations

import heapq
import time
from typing import Any

from runtime.mpi.context import CellReader, MpiBlockContext
from runtime.mpi.control import POLL_SECONDS, Control
from runtime.mpi.windows import Windows
from runtime.scheduler import Engine
from runtime.sim_errors import SimulationTimeout

#: A passive process waits this long past the timeout before it stops the run itself, so that
#: a busy process's own watchdog (which names the block it was running) fires first.
PASSIVE_GRACE_SECONDS = 1.0


class MpiEngine(Engine):
    """The engine of one MPI process (see the module docstring)."""

    remote_clocks = True

    def __init__(
        self, program: Any, mems: list[Any], *, windows: Windows, control: Control, **kw: Any
    ) -> None:
        self.windows = windows
        self.control = control
        self._readers: dict[tuple[str, int], CellReader] = {}
        self.passive_seconds = 0.0  # wall time with nothing runnable (waiting for peers)
        super().__init__(program, mems, **kw)
        self.context_class = MpiBlockContext
        self.process = control.me

    def cell_reader(self, signal: str, rank: int) -> CellReader:
        """The (cached) MPI reader of ``rank``'s cells of ``signal``, for its waits."""
        reader = self._readers.get((signal, rank))
        if reader is None:
            reader = self._readers[(signal, rank)] = CellReader(self.windows, signal, rank)
        return reader

    def interruptible(self) -> bool:
        """The alarm stops this process only inside a kernel, never in an MPI operation (the
        windows hold it there): after a timeout the process still has to tell its peers."""
        return self.current is not None

    def _run(self) -> int:  # type: ignore[override]
        """Simulate the hosted ranks until the termination protocol ends; return its verdict
        (``run``, inherited, arms the watchdog around it).

        Raises :class:`runtime.mpi.control.Stopped` when another process stopped the run, and
        the simulator's errors (kernel error, watchdog) of this process.
        """
        self.begin()
        control = self.control
        clock = time.perf_counter
        while True:
            if self.heap:
                self._drain()
                control.worked()
                continue
            t0 = clock()
            woke = self._rewake()
            if not woke:
                control.check_stop()
                self._check_passive_clock()
                verdict = control.step(self.tasks.all_complete())
            self.passive_seconds += clock() - t0
            if woke:
                control.worked()
            elif verdict is not None:
                return verdict

    def _drain(self) -> None:
        heap = self.heap
        pop = heapq.heappop
        clock = time.monotonic
        next_poll = clock() + POLL_SECONDS
        windows = self.windows
        while heap:
            t, _, _, b = pop(heap)
            self.now = t
            self._step(b)
            if windows.unflushed:  # a block step's remote stores land before anything else happens
                windows.complete()
            self._settle()
            if clock() >= next_poll:
                self.control.check_stop()
                self._rewake()
                next_poll = clock() + POLL_SECONDS

    def _wake_time(self, cell: tuple[int, str, tuple[int, ...]]) -> int:
        """A spinner whose cell a peer changed resumes at the time of the notify that changed it."""
        rank, signal, key = cell
        return max(self.now, self.windows.read_clock(signal, rank, key))

    def _check_passive_clock(self) -> None:
        over = time.monotonic() - self.deadline
        if over < PASSIVE_GRACE_SECONDS:
            return
        spinning = sum(len(v) for v in self.spinners.values())
        left = len(self.tasks.insts) - self.tasks.n_complete
        hosted = self.windows.layout.describe(self.process)
        raise SimulationTimeout(
            f"simulation of {self.program.name!r} exceeded its {self.timeout:g}s wall-clock timeout: "
            f"MPI process {self.process} ({hosted}) waited for its peers at t={self.now} with {left} "
            f"task(s) left and {spinning} block(s) spinning, after {self.steps} kernel steps and "
            f"{self.blocks_run} finished blocks - a peer that is slow, livelocked or stuck in a kernel"
        )
