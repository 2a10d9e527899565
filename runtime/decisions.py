"""Choice points of the scheduler as explicit decisions: recording, replaying, serialising.

The runtime leaves four things to timing, and the engine (``runtime.scheduler``) asks about
each of them at a *choice point*:

* ``step``    - which runnable block executes next (its code up to its next blocking yield);
* ``core``    - which legal core (or cluster, for MIX) a ready block takes;
* ``cohort``  - which idle core each block of a ``sync_start`` cohort takes, one block at a time;
* ``release`` - in which order the consumers that one completion releases enter their queues.

A seeded policy answers from its random generator; a :class:`Decider` answers from a list of
decisions.  Recording the answers of a seeded run (:class:`RecordingPolicy`) gives that list,
and replaying it (:class:`ScriptedDecider`) in the untimed engine reproduces the run exactly:
the timed simulator is one path through the space the explorer (``runtime.verify``) searches.

A decision is recorded only where there was a choice (two or more options).  Options are in a
canonical order that does not depend on object identities, so a schedule written to JSON by one
process replays in another: runnable blocks by (round, rank, task, block), cores by index,
released consumers by fanout order *within a class* - consumers of different shapes enter
different queues and never compete, so only the order inside one class (one shape, or the
zero-block tasks, which complete at once) is a decision, and consumers the release cannot
enqueue (all blocks placed, or still waiting for other producers) are not ordered at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.device import DEFAULT_SCHED_THREADS, EARLY_QUEUE_CAPACITY

if TYPE_CHECKING:  # pragma: no cover
    from runtime.machine import Block, Core, TaskInst
    from runtime.policies import Policy

KINDS = ("step", "core", "cohort", "release")
SCHEDULE_FORMAT = "dslc-schedule"
SCHEDULE_VERSION = 1


class ScheduleMismatch(ValueError):
    """A recorded decision does not fit the run being replayed (other layer, options or config)."""


@dataclass(frozen=True)
class Decision:
    """One answered choice point: ``choice`` of ``count`` options, ``option`` names the one taken."""

    kind: str
    choice: int
    count: int
    option: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "choice": self.choice, "of": self.count, "option": self.option}

    @staticmethod
    def from_json(d: Any, where: str) -> Decision:
        if not isinstance(d, dict):
            raise ScheduleMismatch(f"{where}: a decision must be an object, got {type(d).__name__}")
        kind, choice, count = d.get("kind"), d.get("choice"), d.get("of")
        if kind not in KINDS:
            raise ScheduleMismatch(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(choice, int) or not isinstance(count, int) or not 0 <= choice < count:
            raise ScheduleMismatch(f"{where}: needs integers 0 <= choice < of, got {choice!r} of {count!r}")
        option = d.get("option", "")
        if not isinstance(option, str):
            raise ScheduleMismatch(f"{where}: option must be a string")
        return Decision(kind, choice, count, option)


# --------------------------------------------------------------------------- canonical orders and names


def block_order(b: Block) -> tuple[int, int, int, int]:
    """Canonical order of runnable blocks: round, rank, task index, block index."""
    i = b.inst
    return (i.round, i.rank, i.si, b.index)


def block_label(b: Block) -> str:
    i = b.inst
    return f"{i.spec.name}[{b.index}]@rank{i.rank} round {i.round + 1}"


def inst_label(inst: TaskInst) -> str:
    return f"{inst.spec.name}@rank{inst.rank} round {inst.round + 1}"


def target_label(target: Core | tuple[Core, ...]) -> str:
    if isinstance(target, tuple):
        return "+".join(c.name for c in target)
    return target.name


def release_class(inst: TaskInst) -> str | None:
    """Consumers of one class compete for one queue (zero-block tasks for the completion list).

    None for a consumer this release cannot enqueue anywhere - every block already placed, or
    not the last of its producers to complete nor to resolve - so its place in the order is
    immaterial."""
    if inst.nblocks > 0 and inst.next_block >= inst.nblocks:
        return None
    if inst.n_incomplete > 1 and inst.n_unresolved != 1:
        return None
    return "dummy" if inst.nblocks == 0 else inst.shape


def release_classes(items: Sequence[TaskInst]) -> tuple[list[list[TaskInst]], list[TaskInst]]:
    """``items`` grouped by :func:`release_class` (classes in order of first appearance), and
    the consumers whose order does not matter, in fanout order."""
    groups: dict[str, list[TaskInst]] = {}
    inert: list[TaskInst] = []
    for it in items:
        key = release_class(it)
        if key is None:
            inert.append(it)
        else:
            groups.setdefault(key, []).append(it)
    return list(groups.values()), inert


LABELS: dict[str, Callable[[Any], str]] = {
    "step": block_label,
    "core": target_label,
    "cohort": target_label,
    "release": inst_label,
}


def non_racy(options: Sequence[Any]) -> list[Any]:
    """The options an exact ``has_idle_in_other_threads`` check leaves: idle ones if any exist.

    ``options`` is the racy superset the engine offers a decider (idle cores, then busy cores
    with a free pending slot; for MIX, fully idle clusters and partly busy ones)."""
    idle = [o for o in options if _idle(o)]
    return idle or list(options)


def _idle(option: Any) -> bool:
    if isinstance(option, tuple):
        return all(c.running is None for c in option)
    return option.running is None


# --------------------------------------------------------------------------- deciders


class Decider:
    """Answers every choice point through :meth:`decide`; drives the untimed engine.

    Subclasses implement ``decide(kind, options) -> index``; it is called only when there are
    two or more options.  The engine offers the racy superset of placements
    (docs/runtime-semantics.md §5: the idle check across scheduler threads is an unsynchronised
    snapshot), so every placement a seeded policy can make is among the options.
    """

    name = "decider"
    racy_advisory = True

    def decide(self, kind: str, options: Sequence[Any]) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _pick(self, kind: str, options: Sequence[Any]) -> int:
        return 0 if len(options) == 1 else self.decide(kind, options)

    def pick_step(self, blocks: Sequence[Block]) -> Block:
        return blocks[self._pick("step", blocks)]

    def choose(self, options: Sequence[Any], role: int, badness: Any) -> Any:
        return options[self._pick("core", options)]

    def choose_cohort(self, options: Sequence[Any], n: int) -> list[Any]:
        remaining = list(options)
        picked = []
        for _ in range(n):
            picked.append(remaining.pop(self._pick("cohort", remaining)))
        return picked

    def order_release(self, items: list[Any], spec_index_of: Any) -> list[Any]:
        groups, out = release_classes(items)
        for group in groups:
            while group:
                out.append(group.pop(self._pick("release", group)))
        return out

    # The timed engine's hooks; a decider runs untimed, where they are never consulted.
    def event_key(self, spec_index: int) -> float:  # pragma: no cover - untimed engines only
        return 0.0

    def extra_delay(self, spec_index: int, cost: int) -> int:  # pragma: no cover
        return 0


class ScriptedDecider(Decider):
    """Replays a recorded list of decisions, checking each against the options offered."""

    name = "replay"

    def __init__(self, decisions: Sequence[Decision]) -> None:
        self.decisions = list(decisions)
        self.pos = 0
        self.taken: list[Decision] = []  # the decisions as replayed, each naming its option

    def decide(self, kind: str, options: Sequence[Any]) -> int:
        where = f"decision {self.pos + 1}"
        if self.pos >= len(self.decisions):
            raise ScheduleMismatch(
                f"{where}: the schedule ends but the run still has a {kind} choice among "
                f"{', '.join(LABELS[kind](o) for o in options[:6])}"
            )
        d = self.decisions[self.pos]
        self.pos += 1
        if d.kind != kind or d.count != len(options):
            raise ScheduleMismatch(
                f"{where}: the schedule chose a {d.kind} among {d.count} options, the run offers a "
                f"{kind} among {len(options)} - not a schedule of this layer and configuration"
            )
        label = LABELS[kind](options[d.choice])
        if d.option and label != d.option:
            raise ScheduleMismatch(
                f"{where}: the schedule took {d.option!r}, option {d.choice} of this run is {label!r}"
            )
        self.taken.append(Decision(kind, d.choice, d.count, label))
        return d.choice

    @property
    def exhausted(self) -> bool:
        return self.pos == len(self.decisions)


class RecordingPolicy:
    """Wraps a seeded policy and records its answers as :class:`Decision`\\ s.

    The engine offers this wrapper the racy superset of placements; a policy without racy
    placements sees the subset it always saw (:func:`non_racy`), so its random generator is
    consumed exactly as in an unrecorded run and the recorded run is the same run.
    """

    racy_advisory = True

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = policy.name
        self.decisions: list[Decision] = []

    def _record(self, kind: str, options: Sequence[Any], chosen: Any) -> None:
        if len(options) > 1:
            i = next(k for k, o in enumerate(options) if o is chosen)
            self.decisions.append(Decision(kind, i, len(options), LABELS[kind](chosen)))

    def record_step(self, runnable: Sequence[Block], chosen: Block) -> None:
        self._record("step", sorted(runnable, key=block_order), chosen)

    def choose(self, options: Sequence[Any], role: int, badness: Any) -> Any:
        offered = options if self.policy.racy_advisory else non_racy(options)
        chosen = self.policy.choose(offered, role, badness)
        self._record("core", options, chosen)
        return chosen

    def choose_cohort(self, options: Sequence[Any], n: int) -> list[Any]:
        chosen = self.policy.choose_cohort(options, n)
        remaining = list(options)
        for c in chosen:
            self._record("cohort", remaining, c)
            remaining.remove(c)
        return chosen

    def order_release(self, items: list[Any], spec_index_of: Any) -> list[Any]:
        ordered = self.policy.order_release(items, spec_index_of)
        rank = {id(it): k for k, it in enumerate(ordered)}
        for group in release_classes(items)[0]:
            remaining = list(group)
            for it in sorted(group, key=lambda g: rank[id(g)]):
                self._record("release", remaining, it)
                remaining.remove(it)
        return ordered

    def event_key(self, spec_index: int) -> float:
        return self.policy.event_key(spec_index)

    def extra_delay(self, spec_index: int, cost: int) -> int:
        return self.policy.extra_delay(spec_index, cost)


# --------------------------------------------------------------------------- the JSON schedule


@dataclass
class Schedule:
    """A replayable schedule: the configuration it belongs to and its decisions.

    ``layer``/``params`` name the compiled layer, ``ranks``/``cores``/``rounds``/``seed`` (the
    input seed)/``scalars``/``early_capacity``/``sched_threads`` the run; ``note`` says where
    it came from (e.g. the property a counterexample violates).
    """

    layer: str
    params: dict[str, int]
    ranks: int
    cores: tuple[int, int]
    rounds: int
    seed: int
    decisions: list[Decision]
    scalars: dict[str, int] = field(default_factory=dict)
    early_capacity: int = EARLY_QUEUE_CAPACITY
    sched_threads: int = DEFAULT_SCHED_THREADS
    note: str = ""
    round_scalars: tuple[str, ...] = ("epoch",)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": SCHEDULE_FORMAT,
            "version": SCHEDULE_VERSION,
            "layer": self.layer,
            "params": dict(sorted(self.params.items())),
            "ranks": self.ranks,
            "cores": list(self.cores),
            "rounds": self.rounds,
            "seed": self.seed,
            "scalars": dict(sorted(self.scalars.items())),
            "early_capacity": self.early_capacity,
            "sched_threads": self.sched_threads,
            "round_scalars": list(self.round_scalars),
            "note": self.note,
            "decisions": [d.to_json() for d in self.decisions],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1) + "\n"

    @staticmethod
    def from_json(doc: Any) -> Schedule:
        """Parse a schedule document; :class:`ScheduleMismatch` names what is wrong with it."""
        if not isinstance(doc, dict) or doc.get("format") != SCHEDULE_FORMAT:
            raise ScheduleMismatch(f'not a {SCHEDULE_FORMAT} document (no "format": "{SCHEDULE_FORMAT}")')
        if doc.get("version") != SCHEDULE_VERSION:
            raise ScheduleMismatch(
                f"schedule version {doc.get('version')!r}; this dslc reads {SCHEDULE_VERSION}"
            )

        def need(key: str, kind: type | tuple[type, ...]) -> Any:
            value = doc.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ScheduleMismatch(f"field {key!r} is missing or not {getattr(kind, '__name__', kind)}")
            return value

        cores = need("cores", list)
        if (
            len(cores) != 2
            or not all(isinstance(c, int) and c > 0 for c in cores)
            or cores[1] != 2 * cores[0]
        ):
            raise ScheduleMismatch(f"field 'cores' must be [AIC, 2 x AIC], got {cores!r}")
        params = need("params", dict)
        scalars = doc.get("scalars", {})
        for name, table in (("params", params), ("scalars", scalars)):
            if not isinstance(table, dict) or not all(isinstance(v, int) for v in table.values()):
                raise ScheduleMismatch(f"field {name!r} must map names to integers")
        decisions = need("decisions", list)
        round_scalars = doc.get("round_scalars", ["epoch"])
        if not isinstance(round_scalars, list) or not all(isinstance(n, str) for n in round_scalars):
            raise ScheduleMismatch("field 'round_scalars' must be a list of scalar names")
        ints = {k: need(k, int) for k in ("ranks", "rounds", "seed")}
        if ints["ranks"] < 1 or ints["rounds"] < 1:
            raise ScheduleMismatch("fields 'ranks' and 'rounds' must be >= 1")
        return Schedule(
            layer=need("layer", str),
            params=dict(params),
            ranks=ints["ranks"],
            cores=(cores[0], cores[1]),
            rounds=ints["rounds"],
            seed=ints["seed"],
            decisions=[Decision.from_json(d, f"decision {k + 1}") for k, d in enumerate(decisions)],
            scalars=dict(scalars),
            early_capacity=int(doc.get("early_capacity", EARLY_QUEUE_CAPACITY)),
            sched_threads=int(doc.get("sched_threads", DEFAULT_SCHED_THREADS)),
            note=str(doc.get("note", "")),
            round_scalars=tuple(round_scalars),
        )
