"""Ending a run on every process at once: the termination protocol and the stop cells.

**Quiescence.**  A process is *passive* when it has no runnable block (its event heap is
empty and none of its spinning waits holds) and all its RMA is complete (every operation is
flushed before it returns).  A passive process joins a non-blocking MIN-allreduce with

* ``0`` if it did any work since it last joined (or never joined before),
* ``1`` if it stayed passive since then, ``2`` if it also has no task left,
* ``-1`` if it is stopping (an error or a timeout here or on another process),

and keeps polling its spinning waits while the reduction is in flight.  A result of 2 means
every process finished; 1 means a global deadlock; -1 that the run stops; 0 that someone
worked, so everyone joins again.  Why 1 is a deadlock: process i joined round k at time
t(k, i) after seeing round k - 1 complete, so at the instant T = max_i t(k - 1, i) every process
was inside its interval [t(k - 1, i), t(k, i)], passive throughout; no operation was in flight
then (operations complete before the issuer moves on), and each process re-read its cells
after round k - 1 completed, that is after T, and found no wait satisfied.  Nothing can change
any more.  Every process sees the same sequence of results, so all take the same decision in
the same round.

**Stopping.**  A process whose kernel raises or whose watchdog fires writes its diagnostic
into process 0's control window, then sets the *stop cell* of every process (compare-and-swap
from 0 to its index + 1: the first one wins) and contributes -1 from then on.  The others
read their stop cell between block steps (every :data:`POLL_SECONDS`) and while passive, stop
simulating and contribute -1 too.  A process that never returns to the simulator (a kernel
the watchdog cannot interrupt: stuck in one long C call) cannot take part; after the stop
grace, process 0 prints the diagnostic it holds, names the processes that did not stop, and
aborts the job (``MPI_Abort``, exit 4), so the run never hangs and never ends in an abort
trace alone.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np

#: Verdicts of the termination protocol.
DONE, DEADLOCK, STOPPED = 2, 1, -1

#: Bytes of process 0's control window reserved for each process's diagnostic.
DIAG_BYTES = 1 << 16

#: How often a busy process looks at its stop cell and its spinning waits (wall seconds).
POLL_SECONDS = 0.001

_MIN_PAUSE, _MAX_PAUSE = 2e-5, 1e-3


class Stopped(Exception):
    """Raised inside a process's event loop when another process stopped the run."""


class Control:
    """The control window and the termination protocol of one process (collective to create)."""

    def __init__(self, MPI: Any, comm: Any, stop_grace: float) -> None:
        self.MPI = MPI
        self.comm = comm
        self.me = comm.Get_rank()
        self.nprocs = comm.Get_size()
        self.stop_grace = stop_grace
        size = 4 + (self.nprocs * (4 + DIAG_BYTES) if self.me == 0 else 0)
        self.win = MPI.Win.Allocate(size, 1, comm=comm)
        self.raw = np.frombuffer(self.win.tomemory(), dtype=np.uint8)[:size]
        self.raw[:] = 0  # small: zero it whatever the allocator did
        self.win.Lock_all(MPI.MODE_NOCHECK)
        comm.Barrier()
        self._send = np.zeros(1, np.int32)
        self._recv = np.zeros(1, np.int32)
        self._cell = np.zeros(1, np.int32)
        self._nothing = np.zeros(1, np.int32)
        self.req: Any = None
        self.quiet = False
        self.stopping = False
        self.stop_at: float | None = None
        self.pause = _MIN_PAUSE
        self.last_work = time.monotonic()  # when this process last did something
        self.verdict_at: float | None = None  # when it learnt how the run ends

    # ------------------------------------------------------------------ stop cells

    def _read_stop_cell(self) -> int:
        self.win.Fetch_and_op(self._nothing, self._cell, self.me, 0, self.MPI.NO_OP)
        self.win.Flush(self.me)
        return int(self._cell[0])

    def check_stop(self) -> None:
        """Raise :class:`Stopped` if another process stopped the run."""
        if self._read_stop_cell():
            self._enter_stopping()
            raise Stopped

    def stop(self, kind: str, message: str) -> None:
        """Stop every process with this process's diagnostic (``kind`` is the exception class)."""
        MPI = self.MPI
        data = json.dumps({"kind": kind, "message": message}).encode()
        if len(data) > DIAG_BYTES - 4:
            data = json.dumps({"kind": kind, "message": message[: DIAG_BYTES // 8] + " ..."}).encode()
        blob = np.frombuffer(np.int32(len(data)).tobytes() + data, dtype=np.uint8).copy()
        self.win.Put([blob, blob.size, MPI.BYTE], 0, (self._diag_offset(self.me), blob.size, MPI.BYTE))
        self.win.Flush(0)
        mine = np.array([self.me + 1], np.int32)
        zero = np.zeros(1, np.int32)
        seen = np.zeros(1, np.int32)
        for proc in range(self.nprocs):
            self.win.Compare_and_swap(mine, zero, seen, proc, 0)
            self.win.Flush(proc)
        self._enter_stopping()

    def _enter_stopping(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        self.stop_at = time.monotonic()
        one = np.ones(1, np.int32)
        self.win.Accumulate(
            [one, 1, self.MPI.INT32_T], 0, (4 + 4 * self.me, 1, self.MPI.INT32_T), self.MPI.REPLACE
        )
        self.win.Flush(0)

    def _diag_offset(self, proc: int) -> int:
        return 4 + 4 * self.nprocs + proc * DIAG_BYTES

    def first_stopper(self) -> int | None:
        """(Process 0) the process whose stop reached process 0 first."""
        value = self._read_stop_cell()
        return value - 1 if value else None

    def diagnostic(self, proc: int) -> tuple[str, str] | None:
        """(Process 0) ``(kind, message)`` that process ``proc`` stopped with, if it wrote one."""
        off = self._diag_offset(proc)
        self.win.Sync()
        n = int(self.raw[off : off + 4].view(np.int32)[0])
        if n <= 0:
            return None
        doc = json.loads(bytes(self.raw[off + 4 : off + 4 + n]).decode())
        return doc["kind"], doc["message"]

    def _silent(self) -> list[int]:
        self.win.Sync()
        acks = self.raw[4 : 4 + 4 * self.nprocs].view(np.int32)
        return [p for p in range(self.nprocs) if not acks[p]]

    # ------------------------------------------------------------------ protocol

    def worked(self) -> None:
        """This process did something: it is not passive since its last join."""
        self.quiet = False
        self.pause = _MIN_PAUSE
        self.last_work = time.monotonic()

    def step(self, done: bool) -> int | None:
        """One passive iteration: join a round, or test the one in flight; a verdict or None."""
        if self.req is None:
            if self.stopping:
                vote = STOPPED
            elif self.quiet:
                vote = DONE if done else DEADLOCK
            else:
                vote = 0
            self._send[0] = vote
            self.req = self.comm.Iallreduce(self._send, self._recv, op=self.MPI.MIN)
            self.quiet = True
            return None
        if self.req.Test():
            self.req = None
            verdict = int(self._recv[0])
            if verdict:
                self.verdict_at = time.monotonic()
            return verdict or None
        self._check_stop_grace()
        time.sleep(self.pause)
        self.pause = min(2 * self.pause, _MAX_PAUSE)
        return None

    def finish(self) -> int:
        """(A stopping process) contribute -1 until the protocol ends; the verdict."""
        while True:
            verdict = self.step(done=False)
            if verdict is not None:
                return verdict

    def _check_stop_grace(self) -> None:
        if self.stop_at is None:
            return
        waited = time.monotonic() - self.stop_at
        if waited < self.stop_grace * (1 if self.me == 0 else 2):
            return
        if self.me == 0:
            lines = []
            first = self.first_stopper()
            if first is not None:
                diag = self.diagnostic(first)
                if diag is not None:
                    lines.append(diag[1])
            silent = self._silent()
            lines.append(
                f"MPI process(es) {', '.join(map(str, silent))} did not stop within {self.stop_grace:g} s after "
                "the run was stopped (a kernel that runs without yielding?); aborting the MPI job"
            )
        else:
            lines = [f"MPI process {self.me}: process 0 did not end the stopped run; aborting the MPI job"]
        print("\n".join(lines), file=sys.__stderr__, flush=True)
        self.comm.Abort(4)  # dslc run's exit code for a run stopped at --timeout

    def free(self) -> None:
        """End the epoch and free the control window (collective)."""
        self.win.Unlock_all()
        self.win.Free()
