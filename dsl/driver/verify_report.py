"""What ``dslc verify`` prints: the verdict per property, its certainty, the search figures
and the counterexample (as a story, as the deadlock report of ``dslc run``, as a schedule)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from runtime.decisions import Schedule
from runtime.verify import Config, Estimate, Result, Witness

#: Property rows: violation kind -> (name, what its violation means).
PROPERTIES = (
    ("deadlock", "deadlock freedom", "a reachable state where no block can move and work remains"),
    ("nondeterminism", "determinism", "two complete schedules leave different bits in an output"),
    ("golden", "golden", "a complete schedule's outputs fail the layer's golden"),
    ("kernel-error", "no kernel error", "a kernel raises under some schedule"),
    ("step-limit", "termination", "a block resumes more often than the step limit"),
)


@dataclass
class Verdict:
    layer: str
    file: str
    config: Config
    seed: int
    result: Result
    estimate: Estimate | None
    witness: Witness | None = None
    schedule: Schedule | None = None
    reference: Schedule | None = None
    reference_witness: Witness | None = None
    saved: str | None = None
    saved_reference: str | None = None
    trace: str | None = None
    golden: str | None = None  # why the golden is not checked, or None when it is
    notes: list[str] = field(default_factory=list)  # what this configuration cannot show

    @property
    def outcome(self) -> str:
        if self.result.violation is not None:
            return "violated"
        return "verified" if self.result.complete else "inconclusive"

    @property
    def certainty(self) -> str:
        if self.result.violation is not None:
            return "proven"  # a concrete schedule, replayable
        return "complete" if self.result.complete else "bounded"


def _status(v: Verdict, kind: str) -> tuple[str, str]:
    r = v.result
    if r.violation is not None and r.violation.kind == kind:
        return "VIOLATED", r.violation.message
    if kind == "golden" and v.golden:
        return "not checked", v.golden
    if r.violation is not None:
        if kind in ("nondeterminism", "golden") or not r.complete:
            return "unknown", "the search stopped at the violation (or was cut at its depth)"
    if not r.complete:
        return "unknown", "no violation in the explored part (bounded)"
    if kind == "nondeterminism":
        return "holds", f"{r.stats.terminals:,} complete end state(s), one output bit pattern"
    return "holds", "every schedule explored"


def _config_line(v: Verdict) -> str:
    c = v.config
    return (
        f"{c.ranks} rank(s) x {c.n_aic} cluster(s) ({c.n_aic} AIC + {2 * c.n_aic} AIV), "
        f"{c.rounds} round(s), inputs seed {v.seed}" + (f", scalars {dict(c.scalars)}" if c.scalars else "")
    )


def _reduction(v: Verdict) -> str:
    s = v.result.stats
    parts = [
        f"sleep sets skipped {s.sleep_pruned:,} steps",
        f"persistent sets {s.persistent_pruned:,}",
        f"symmetry {s.symmetry_pruned:,} dispatch options",
        f"{s.revisits:,} revisits cut by state hashing",
    ]
    text = "reduction: " + ", ".join(parts)
    e = v.estimate
    if e is not None and s.transitions:
        text += (
            f"; unreduced search about {e.transitions:.3g} transitions, {e.schedules:.3g} schedules "
            f"(Knuth, {e.probes} probes, {e.low:.2g}..{e.high:.2g}) = {e.transitions / s.transitions:,.0f}x "
            "the transitions explored"
        )
    return text


def render_text(v: Verdict) -> str:
    r, s = v.result, v.result.stats
    out = [f"verify {v.layer} ({v.file}): {_config_line(v)}"]
    out += [f"  note: {n}" for n in v.notes]
    out.append("")
    for kind, name, _meaning in PROPERTIES:
        status, why = _status(v, kind)
        out.append(f"  {name:<17} {status:<12} {why}")
    out.append("")
    if r.violation is not None:
        shortest = "the shortest found" if r.shortest else "the shortest found before the search stopped"
        out.append(
            f"VIOLATED: {r.violation.kind} (certainty: proven by the schedule below, {shortest}: "
            f"{len(v.witness.steps) if v.witness else r.violation.depth} steps)"
        )
    elif r.complete:
        out.append(
            "VERIFIED (certainty: complete - every equivalence class of schedules of this configuration)"
        )
    else:
        limit = "--max-states" if r.stopped == "max-states" else "--timeout"
        out.append(
            f"INCONCLUSIVE (certainty: bounded - stopped at {limit} with {r.pending:,} block steps still "
            "to explore; no violation among the states explored)"
        )
    out.append(
        f"explored {s.distinct:,} distinct states ({s.transitions:,} transitions) in {s.elapsed:.2f} s: "
        f"{s.per_second:,.0f} distinct states/s, max depth {s.max_depth}, {s.rebuilds:,} generator rebuilds, "
        f"{s.replayed:,} steps replayed"
    )
    out.append(_reduction(v))
    if r.violation is not None and v.witness is not None:
        out += _counterexample(v)
    return "\n".join(out) + "\n"


def _counterexample(v: Verdict) -> list[str]:
    w, viol = v.witness, v.result.violation
    out = ["", f"counterexample ({len(w.steps)} steps, {len(w.decisions)} decisions):", w.render()]
    if w.deadlock is not None:
        out += ["", "deadlock report (as dslc run prints it):"]
        out += ["  " + line for line in w.deadlock.render().splitlines()]
    if viol.kind == "nondeterminism" and v.reference is not None:
        d = viol.detail
        if v.reference_witness is not None:
            out += ["", "the reference schedule (the other bits):", v.reference_witness.render()]
        out += [
            "",
            f"first differing element: {d['tensor']}{d['index']} on rank {d['rank']}: "
            f"{d['reference']} (reference schedule) vs {d['value']} (this schedule); "
            f"{d['elements']} element(s) differ",
        ]
    out.append("")
    if v.saved:
        out.append(
            f"schedule written to {v.saved}; replay it: dslc run {v.file} --replay {v.saved} --trace out.json"
        )
        if v.saved_reference:
            out.append(f"the reference schedule (other bits) is in {v.saved_reference}")
    else:
        out.append(
            f"save the schedule with --save SCHEDULE.json, then: dslc run {v.file} --replay SCHEDULE.json"
        )
    if v.trace:
        out.append(f"Chrome trace of the counterexample written to {v.trace} (opens in ui.perfetto.dev)")
    return out


def render_json(v: Verdict) -> str:
    r, s = v.result, v.result.stats
    doc: dict[str, Any] = {
        "layer": v.layer,
        "file": v.file,
        "config": {
            "ranks": v.config.ranks,
            "cores": [v.config.n_aic, 2 * v.config.n_aic],
            "rounds": v.config.rounds,
            "seed": v.seed,
            "scalars": dict(v.config.scalars),
            "sched_threads": v.config.n_threads,
        },
        "notes": v.notes,
        "result": v.outcome,
        "certainty": v.certainty,
        "stopped": r.stopped or None,
        "properties": {
            kind: dict(zip(("status", "why"), _status(v, kind), strict=True)) for kind, _n, _m in PROPERTIES
        },
        "stats": {**asdict(s), "distinct_per_second": s.per_second, "pending": r.pending},
        "estimate": asdict(v.estimate) if v.estimate is not None else None,
        "counterexample": None,
    }
    if r.violation is not None and v.witness is not None:
        viol = r.violation
        doc["counterexample"] = {
            "kind": viol.kind,
            "message": viol.message,
            "shortest_search_complete": r.shortest,
            "steps": [st.to_json() for st in v.witness.steps],
            "initial_placements": v.witness.initial,
            "deadlock": v.witness.deadlock.render() if v.witness.deadlock is not None else None,
            "detail": viol.detail or None,
            "schedule": v.schedule.to_json() if v.schedule is not None else None,
            "reference_schedule": v.reference.to_json() if v.reference is not None else None,
            "saved": v.saved,
            "trace": v.trace,
        }
    return json.dumps(doc, indent=1) + "\n"
