"""Engine state shipped to process 0 and merged into one view of every rank.

The deadlock report (``runtime.deadlock.build_report``), the Chrome trace
(``runtime.trace.build_trace``) and the schedule (``runtime.simulator.block_records``) read an
engine: its ranks' cores and slots, its task instances and their blocks, the notify log.  Each
process captures that state of its own ranks as plain data (:func:`capture`); process 0
rebuilds the same records for all ranks (:class:`MergedRun`) and hands them to the same
functions, so an MPI run is reported exactly as an in-process one - the cycle of a deadlock
crosses processes as it crosses ranks.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from runtime.machine import INST_STATE, Block, RankState, TaskInst
from runtime.memory import Wait
from runtime.program import Program

_INST_FIELDS = (*INST_STATE, "complete_at")
_BLOCK_FIELDS = (
    "slot0",
    "promoted",
    "nrun",
    "gated",
    "staged_gated",
    "state",
    "doorbell",
    "start",
    "end",
    "spin_start",
    "spins",
    "barriers",
    "barrier_start",
    "steps",
)


def capture(eng: Any) -> dict[str, Any]:
    """The state of ``eng``'s hosted ranks as picklable data."""
    where: dict[int, tuple[int, int]] = {}
    insts = []
    for i, inst in enumerate(eng.insts):
        blocks = []
        for j, b in enumerate(inst.blocks):
            where[id(b)] = (i, j)
            w = b.wait
            wait = None if w is None else (w.signal, w.key, w.cmp, w.expected, w.value())
            blocks.append(
                (
                    b.index,
                    tuple((c.kind, c.index) for c in b.cores),
                    b.placed_at,
                    wait,
                    tuple(getattr(b, f) for f in _BLOCK_FIELDS),
                )
            )
        barrier = [inst.blocks.index(x) for x in inst.barrier_wait]
        fields = tuple(getattr(inst, f) for f in _INST_FIELDS)
        insts.append((inst.si, inst.rank, inst.round, fields, barrier, blocks))
    slots = []
    for r in eng.hosted:
        for c in eng.ranks[r].cores:
            run = where.get(id(c.running)) if c.running is not None else None
            pend = where.get(id(c.pending)) if c.pending is not None else None
            if run is not None or pend is not None:
                slots.append((r, c.kind, c.index, run, pend))
    return {
        "insts": insts,
        "slots": slots,
        "notify_log": {k: set(v) for k, v in eng.notify_log.items()},
        "sig_notifiers": {k: set(v) for k, v in eng.sig_notifiers.items()},
        "roles": list(eng.roles),
        "now": eng.now,
        "makespan": eng.makespan,
        "blocks_run": eng.blocks_run,
        "waits": eng.waits,
        "steps": eng.steps,
    }


class MergedRun:
    """Every rank's cores, task instances and blocks, rebuilt from the processes' snapshots.

    It has the attributes the report, trace and schedule builders read from an engine;
    ``now`` and ``makespan`` are the latest over processes (each process keeps its own
    simulated clock, kept causal by the notify clocks), the counters are sums.
    """

    def __init__(
        self,
        program: Program,
        snapshots: list[dict[str, Any]],
        *,
        n_aic: int,
        n_threads: int,
        nranks: int,
        rounds: int,
        policy: str,
        seed: int,
    ) -> None:
        self.program = program
        self.nranks = nranks
        self.rounds = rounds
        self.seed = seed
        self.policy = SimpleNamespace(name=policy)
        self.ranks = [RankState(r, n_aic, n_threads) for r in range(nranks)]
        self.notify_log: dict[tuple, set] = {}
        self.sig_notifiers: dict[str, set] = {}
        self.roles = [0] * len(program.tasks)
        self.now = max(s["now"] for s in snapshots)
        self.makespan = max(s["makespan"] for s in snapshots)
        self.blocks_run = sum(s["blocks_run"] for s in snapshots)
        self.waits = sum(s["waits"] for s in snapshots)
        self.steps = sum(s["steps"] for s in snapshots)
        by_key: dict[tuple[int, int, int], TaskInst] = {}
        for snap in snapshots:
            rebuilt = [self._inst(rec) for rec in snap["insts"]]
            for inst in rebuilt:
                by_key[(inst.rank, inst.round, inst.si)] = inst
            for r, kind, index, run, pend in snap["slots"]:
                core = self.ranks[r].by_kind[kind][index]
                core.running = rebuilt[run[0]].blocks[run[1]] if run is not None else None
                core.pending = rebuilt[pend[0]].blocks[pend[1]] if pend is not None else None
                self.ranks[r].refresh(core)
            for cell, sources in snap["notify_log"].items():
                self.notify_log.setdefault(cell, set()).update(sources)
            for signal, tasks in snap["sig_notifiers"].items():
                self.sig_notifiers.setdefault(signal, set()).update(tasks)
            self.roles = [a | b for a, b in zip(self.roles, snap["roles"], strict=True)]
        self.insts = [by_key[k] for k in sorted(by_key, key=lambda k: (k[1], k[0], k[2]))]
        for inst in self.insts:
            spec = inst.spec
            prods = [by_key[(inst.rank, inst.round, d)] for d in spec.deps]
            if inst.round > 0:
                prods += [by_key[(inst.rank, inst.round - 1, d)] for d in spec.prev_round_deps]
            inst.producers = prods
            for p in prods:
                p.consumers.append(inst)

    def _inst(self, rec: tuple) -> TaskInst:
        si, rank, rnd, fields, barrier, blocks = rec
        inst = TaskInst(self.program.tasks[si], si, rank, rnd, None)
        for name, value in zip(_INST_FIELDS, fields, strict=True):
            setattr(inst, name, value)
        by_kind = self.ranks[rank].by_kind
        for index, cores, placed_at, wait, values in blocks:
            b = Block(inst, index, tuple(by_kind[k][i] for k, i in cores), placed_at, False)
            for name, value in zip(_BLOCK_FIELDS, values, strict=True):
                setattr(b, name, value)
            if wait is not None:
                signal, key, cmp, expected, current = wait
                b.wait = Wait(signal, key, cmp, expected, {key: current})
            inst.blocks.append(b)
        inst.barrier_wait = [inst.blocks[j] for j in barrier]
        return inst
