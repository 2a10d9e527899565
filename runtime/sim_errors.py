"""Exceptions raised by the simulator.

They are separate from the engine so that callers (CLI, tests, the lint's reproduction step)
can catch them without importing the scheduler.  Every message names the task, block, rank and
round involved: a simulator error is a diagnostic, never a bare traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from runtime.deadlock import DeadlockReport


class SimulatorError(Exception):
    """Base class of everything the simulator raises on purpose."""


class DeadlockError(SimulatorError):
    """No block can make progress and nothing is scheduled: the run can never finish.

    ``report`` is a :class:`runtime.deadlock.DeadlockReport` (stuck blocks, what each waits
    for, and a wait-for cycle when one exists); ``str()`` renders it.
    """

    def __init__(self, report: DeadlockReport) -> None:
        super().__init__(report.render())
        self.report = report
        self.decisions: list | None = None  # the run's choices, when it was recorded or replayed


class SimulationTimeout(SimulatorError):
    """The run was stopped by a limit -- the wall-clock watchdog, or ``max_block_steps`` --
    before it finished. ``progress`` (a :class:`runtime.watchdog.Progress`) says how far it got;
    the message says whether it was still making progress (slow) or looked stuck."""

    def __init__(self, message: str, progress=None) -> None:
        super().__init__(message)
        self.progress = progress


class StepLimitExceeded(SimulationTimeout):
    """One block resumed more often than ``max_block_steps`` (a kernel that never returns)."""


class CohortTooLargeError(SimulatorError, ValueError):
    """A ``sync_start`` grid needs more cores than the device has (runtime orch code 7)."""

    def __init__(self, task: str, blocks: int, capacity: int, unit: str) -> None:
        super().__init__(
            f"sync_start task {task!r} needs all {blocks} blocks co-resident but the device has only "
            f"{capacity} {unit}; the runtime refuses such a cohort (REQUIRE_SYNC_START_INVALID)"
        )
        self.task = task
        self.blocks = blocks
        self.capacity = capacity


class KernelError(SimulatorError):
    """A kernel (or a predicate) raised, or yielded something the simulator does not understand."""
