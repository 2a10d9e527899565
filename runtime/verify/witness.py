"""A counterexample as a person reads it: the schedule replayed step by step, with what each
step did, where every block was placed, and - for a deadlock - the report ``dslc run`` prints.

The replay is the ordinary untimed engine answering its choice points from the schedule
(:class:`runtime.decisions.ScriptedDecider`), observed from outside through the explorer's
``ctx`` (which reports notifies and waits): nothing here decides anything, so the story told
is the schedule's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.deadlock import DeadlockReport, build_report
from runtime.decisions import Decision, ScheduleMismatch, ScriptedDecider, block_label
from runtime.machine import BARRIER, DONE, SPIN, Block
from runtime.memory import format_cell
from runtime.program import Program
from runtime.verify.space import Config, Space


@dataclass
class Step:
    """One block step of the schedule and its consequences."""

    number: int
    block: str  # push[1]@rank0 round 1
    core: str  # AIV1 (running)
    outcome: str  # "finished", "spins on arrived[1] (value 1, needs >= 2)", ...
    notifies: list[str] = field(default_factory=list)
    placed: list[str] = field(default_factory=list)  # blocks placed by the settle that followed

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.number,
            "block": self.block,
            "core": self.core,
            "outcome": self.outcome,
            "notifies": self.notifies,
            "placed": self.placed,
        }

    def render(self) -> str:
        lines = [f"{self.number:>4}. {self.block} on {self.core}: {self.outcome}"]
        if self.notifies:
            lines.append("        notifies " + ", ".join(self.notifies))
        lines += [f"        placed {p}" for p in self.placed]
        return "\n".join(lines)


@dataclass
class Witness:
    """The replayed counterexample: initial placements, steps, the final deadlock report."""

    initial: list[str]
    steps: list[Step]
    complete: bool
    deadlock: DeadlockReport | None
    decisions: list[Decision]  # the schedule, every decision naming the option it took

    def render(self) -> str:
        out = [f"      submitted; placed {p}" for p in self.initial]
        out += [s.render() for s in self.steps]
        return "\n".join(out)


def _where(b: Block) -> str:
    names = "+".join(c.name for c in b.cores)
    slot = "pending" if any(c.pending is b for c in b.cores) else "running"
    return f"{names} ({slot})"


def _placement(b: Block) -> str:
    text = f"{block_label(b)} on rank {b.inst.rank} {_where(b)}"
    behind = [block_label(c.running) for c in b.cores if c.pending is b and c.running is not None]
    if behind:
        text += f" behind {', '.join(behind)}"
    if b.gated:
        text += ", gated until its producers complete"
    return text


def _outcome(b: Block, steps_before: int) -> str:
    if b.state == DONE:
        return "ran to completion"
    if b.state == SPIN and b.wait is not None:
        w = b.wait
        op = ">=" if w.cmp == "ge" else "=="
        again = "still " if b.steps == steps_before else ""
        return f"{again}spins on {format_cell(w.signal, w.key)} (value {w.value()}, needs {op} {w.expected})"
    if b.state == BARRIER:
        i = b.inst
        return f"waits at barrier {i.barrier_gen + 1} ({len(i.barrier_wait)} of {i.nblocks} arrived)"
    return "yielded"


def replay_witness(
    program: Program, inputs: dict | list[dict], config: Config, decisions: list[Decision]
) -> Witness:
    """Replay ``decisions`` and describe every step (raises ScheduleMismatch if they do not fit)."""
    decider = ScriptedDecider(decisions)
    space = Space(program, inputs, config, decider)
    seen: set[Block] = set()

    def placed() -> list[str]:
        new = []
        for inst in space.insts:
            for b in inst.blocks:
                if b not in seen:
                    seen.add(b)
                    new.append(_placement(b))
        return new

    space.execute(None)
    initial = placed()
    steps: list[Step] = []
    while True:
        runnable = space.runnable_blocks()
        if not runnable:
            break
        b = decider.pick_step(runnable)
        where = _where(b)
        before = b.steps
        try:
            space.execute(b)
        finally:
            obs = space.last_observer
        notifies = [
            f"{format_cell(sig, key)}@rank{peer} {'+=' if op == 'add' else '='} {value}"
            for sig, peer, key, op, value in obs.notifies
        ]
        steps.append(Step(len(steps) + 1, block_label(b), where, _outcome(b, before), notifies, placed()))
    if not decider.exhausted:
        raise ScheduleMismatch(f"the run ended with {len(decisions) - decider.pos} decision(s) left over")
    complete = space.complete()
    report = None if complete else build_report(space.eng)
    return Witness(initial, steps, complete, report, decider.taken)
