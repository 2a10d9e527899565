"""The device facts the lint and the simulator share: cores per rank, scheduler threads, and
the capacity of an early-dispatch queue. The AscendC target (``lowering.codegen.ascendc``:
A721, the host's ``DSLC_*_CORES`` defaults) and the PyPTO reader (``available_aiv_count()``)
take the a2a3 cores from here too.

Defined once, here, because a rule that predicts a hang or an overflow is only as right as the
numbers the simulator runs with: D110 reports more early candidates than the queue holds, O601
and O602 compare cohorts with the cores of a preset, and the simulator must overflow and
refuse at exactly those numbers (tests/checks/test_device_facts.py ties them). ``runtime`` is
the bottom of the pipeline, so the lint (``lowering.checks.rule``) and the target import from
it, never the other way round; the kernel-cache key covers this file
(``lowering.codegen.common.GENERATOR_SOURCES``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """One rank of a device: cores by shape (a cluster is 1 AIC + 2 AIV) and scheduler threads."""

    aic: int
    aiv: int
    sched_threads: int


#: ``sim`` is the 8-cluster a2a3sim/a5sim device running the a2a3 scheduler code (3 threads).
PRESETS: dict[str, Device] = {
    "sim": Device(aic=8, aiv=16, sched_threads=3),
    "a2a3": Device(aic=24, aiv=48, sched_threads=3),
    "a5": Device(aic=36, aiv=72, sched_threads=4),
}

#: Scheduler threads of a device given as (n_aic, n_aiv) rather than by preset.
DEFAULT_SCHED_THREADS = 3

#: Unstaged early-dispatch candidate blocks one queue (per core shape, and one for sync_start
#: grids) holds in simpler before #1812 (docs/runtime-semantics.md §21.1 #899, rule R12).
EARLY_QUEUE_CAPACITY_BEFORE_1812 = 64

#: The capacity the lint and the simulator assume by default: the runtime pypto-lib requires
#: today is simpler after #1812, whose capacity the references do not give; what is known is
#: that it runs the 128 candidates of one routed-expert producer at EP8 that overflowed the 64
#: of the older runtime (pypto-lib #899). So 128 is the largest fan-out known to run, and a
#: count above it is the one a user must look at. ``--early-queue 64`` (or ``early-queue`` in
#: ``[tool.dslc]``) checks against the older runtime. Decision recorded in docs/lint.md (D110).
EARLY_QUEUE_CAPACITY = 128
