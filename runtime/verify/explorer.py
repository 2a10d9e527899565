"""Depth-first search of every schedule the runtime model admits, with reduction.

A *state* is the engine at a choice point where some block must be picked to step; a
*transition* steps one runnable block and settles, answering every dispatch choice point on
the way (which core, which cohort slots, which release order).  The search enumerates, per
state, the runnable blocks and, per block, every answer vector of its settle - so every
schedule of the runtime model (docs/runtime-semantics.md §2-§7: placement, pending slots, early
dispatch, cohorts, barriers, interleavings across cores and ranks, completion order) is a path.

Reductions, each sound for the properties checked (reachable deadlocks and the outputs of
every complete schedule):

* **state hashing** - a state already expanded is cut (fingerprints up to core symmetry,
  :mod:`runtime.verify.space`);
* **sleep sets** - after exploring block ``a`` at a state, the siblings' subtrees need not
  step ``a`` again before something dependent on it has run (Godefroid); a revisited state is
  re-expanded only for the blocks asleep at its first visit but awake now;
* **persistent sets** - where the runnable blocks of one rank cannot interact with anything
  the other ranks still have to do (disjoint arrays and signals, by the kernels' static
  footprints), only that rank's blocks are expanded.  The state graph has no cycles (every
  transition resumes a generator or retires a block, and trails only grow), so no cycle
  proviso is needed;
* **symmetry** - dispatch options that a permutation of interchangeable cores maps onto each
  other are tried once, and isomorphic states share a fingerprint.

After a first violation the search goes on bounded by its depth and re-expands states reached
by shorter paths (as SPIN's ``-i``), so the counterexample reported is the shortest found.

The engine answers its choice points through :mod:`runtime.verify.decider`; the verdict the
search returns is made of the records in :mod:`runtime.verify.verdict`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from runtime.blas import single_threaded_blas
from runtime.decisions import Decision
from runtime.machine import Block
from runtime.program import Program
from runtime.sim_errors import SimulatorError, StepLimitExceeded
from runtime.verify.decider import ExploreDecider
from runtime.verify.effects import Effect
from runtime.verify.snapshots import Snapshot
from runtime.verify.space import Config, Space
from runtime.verify.verdict import Result, Stats, Violation

_ROOT = object()  # the pseudo-block of the first transition: submitting the rounds
_complete = attrgetter("complete")


class _Frame:
    __slots__ = (
        "snap",
        "depth",
        "runnable",
        "todo",
        "cur",
        "script",
        "effect",
        "done",
        "sleep",
        "parent",
        "via",
    )

    def __init__(
        self, snap: Snapshot, depth: int, runnable: list, todo: list, sleep: dict, parent: Any, via: list
    ):
        self.snap = snap
        self.depth = depth
        self.runnable = runnable
        self.todo = todo
        self.cur: Any = None
        self.script: list[int] = []
        self.effect: Effect | None = None
        self.done: list[tuple[Block, Effect]] = []
        self.sleep = sleep
        self.parent = parent
        self.via = via  # decisions of the transition that led here

    def path(self) -> list[Decision]:
        parts = []
        f = self
        while f is not None:
            parts.append(f.via)
            f = f.parent
        return [d for part in reversed(parts) for d in part]


OutputCheck = Callable[[list[dict[str, np.ndarray]]], list[str]]


def explore(
    program: Program,
    inputs: dict | list[dict],
    config: Config,
    *,
    max_states: int = 1_000_000,
    timeout: float = 60.0,
    check_outputs: OutputCheck | None = None,
    determinism: bool = True,
    shortest: bool = True,
    exhaustive: bool = False,
    reduce: bool = True,
    progress: Callable[[Stats, int], None] | None = None,
) -> Result:
    """Explore every schedule of ``program`` for ``config``.

    ``check_outputs`` (the golden) is called once per distinct output of a complete schedule
    with the output, inout and window arrays of every rank, and returns failure messages.
    ``determinism=False`` records the distinct outputs (``Result.outputs``) without calling two
    of them a violation.  ``shortest=False`` stops at the first violation; ``exhaustive=True``
    explores everything whatever it finds (for tests: every output, every deadlock).  ``reduce=False``
    turns off sleep and persistent sets (state hashing and symmetry stay), for measuring what
    they save.  ``progress(stats, stack_depth)`` is called about ten times a second.
    """
    search = _Search(
        program,
        inputs,
        config,
        max_states,
        timeout,
        check_outputs,
        determinism,
        shortest,
        exhaustive,
        reduce,
        progress,
    )
    with single_threaded_blas():
        return search.run()


class _Search:
    def __init__(
        self,
        program: Program,
        inputs: Any,
        config: Config,
        max_states: int,
        timeout: float,
        check_outputs: OutputCheck | None,
        determinism: bool,
        shortest: bool,
        exhaustive: bool,
        reduce: bool,
        progress: Any,
    ) -> None:
        self.decider = ExploreDecider()
        self.space = Space(program, inputs, config, self.decider)
        self.determinism = determinism
        self.decider.space = self.space
        self.max_states = max_states
        self.timeout = timeout
        self.check_outputs = check_outputs
        self.shortest = shortest
        self.reduce = reduce
        self.progress = progress
        self.stats = Stats()
        self.visited: dict[int, list] = {}
        self.best: Violation | None = None
        self.bound: int | None = None
        self.outputs: dict[tuple[bytes, ...], tuple[int, list[Decision]]] = {}
        self.live: Any = None  # the frame whose state the engine holds (None: unknown)
        self.stack: list[_Frame] = []
        self.exhaustive = exhaustive
        self.deadlocks: set[tuple] = set()
        self._others: dict[tuple[bool, ...], dict[int, tuple[int, int, int]]] = {}

    # ------------------------------------------------------------------ main loop

    def run(self) -> Result:
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        next_report = t0 + 0.1
        space, stats = self.space, self.stats
        root = _Frame(space.snapshots.capture(), -1, [], [_ROOT], {}, None, [])
        stack = self.stack
        stack.append(root)
        stopped = ""
        while stack:
            f = stack[-1]
            if f.cur is None or (self.bound is not None and f.depth + 1 >= self.bound):
                if not f.todo or self.bound is not None and f.depth + 1 >= self.bound:
                    stack.pop()
                    continue
                f.cur = f.todo.pop(0)
                f.script = []
                f.effect = None
            now = time.monotonic()
            if now > next_report:
                next_report = now + 0.1
                stats.elapsed = now - t0
                if self.progress is not None:
                    self.progress(stats, len(stack))
                if now > deadline:
                    stopped = "timeout"
                    break
            if stats.distinct >= self.max_states:
                stopped = "max-states"
                break
            self._transition(f)
        stats.elapsed = time.monotonic() - t0
        stats.rebuilds = space.rebuilds
        stats.replayed = space.memo.hits
        if self.best is not None and not self.shortest:
            stopped = stopped or "violation"
        complete = not stopped
        pending = sum(len(f.todo) + (f.cur is not None) for f in stack)
        return Result(
            complete, stopped, self.best, stats, complete, set(self.outputs), pending, self.deadlocks
        )

    def _transition(self, f: _Frame) -> None:
        space, decider, stats = self.space, self.decider, self.stats
        if self.live is not f:
            space.snapshots.restore(f.snap)
            self.live = f
        b = None if f.cur is _ROOT else f.cur
        via: list[Decision] = []
        if b is not None and len(f.runnable) > 1:
            via.append(Decision("step", f.runnable.index(b), len(f.runnable)))
        decider.start(f.script)
        stats.transitions += 1
        self.live = None
        try:
            effect = space.execute(b)
        except SimulatorError as err:
            via += [Decision(k, i, n) for k, i, n, _r in decider.log]
            self._error(f, err, via)
            self._next_script(f, decider.log)
            return
        log = decider.log
        for pos, (_k, _i, n, reps) in enumerate(log):
            if pos >= len(f.script):
                stats.symmetry_pruned += n - len(reps)
        via += [Decision(k, i, n) for k, i, n, _r in log]
        if f.effect is None:
            f.effect = effect
        sleep: dict[Block, Effect] = {}
        if self.reduce and effect is not None:
            for a, ea in f.sleep.items():
                if ea.independent(effect):
                    sleep[a] = ea
            for a, ea in f.done:  # blocks fully explored here before this one (not itself)
                if ea.independent(effect):
                    sleep[a] = ea
        self._next_script(f, log)
        self._visit(f, sleep, via)

    def _next_script(self, f: _Frame, log: list) -> None:
        for j in range(len(log) - 1, -1, -1):
            _k, chosen, _n, reps = log[j]
            k = list(reps).index(chosen)
            if k + 1 < len(reps):
                f.script = [e[1] for e in log[:j]] + [reps[k + 1]]
                return
        if f.effect is not None:
            f.done.append((f.cur, f.effect))
        f.cur = None

    def _visit(self, parent: _Frame, sleep: dict[Block, Effect], via: list[Decision]) -> None:
        space, stats = self.space, self.stats
        depth = parent.depth + 1
        if self.bound is not None and depth >= self.bound:
            return
        snap = space.snapshots.capture(parent.snap, space.touched)
        fp = snap.fp
        entry = self.visited.get(fp)
        runnable = space.runnable_blocks()
        if entry is None:
            self.visited[fp] = [frozenset(sleep), depth]
            stats.distinct += 1
            if depth > stats.max_depth:
                stats.max_depth = depth
            if not runnable:
                self._end_state(parent, via, depth)
                return
            todo = self._expand(runnable, sleep)
        else:
            stored, sdepth = entry
            if self.bound is not None and depth < sdepth:
                entry[0], entry[1] = frozenset(sleep), depth
                if not runnable:
                    self._end_state(parent, via, depth)
                    return
                todo = self._expand(runnable, sleep)
            else:
                wake = stored - sleep.keys()
                if not wake:
                    stats.revisits += 1
                    return
                entry[0] = stored & sleep.keys()
                todo = [b for b in self._persistent(runnable) if b in wake]
                if not todo:
                    stats.revisits += 1
                    return
        frame = _Frame(snap, depth, runnable, todo, sleep, parent, via)
        self.stack.append(frame)
        self.live = frame

    def _expand(self, runnable: list[Block], sleep: dict[Block, Effect]) -> list[Block]:
        chosen = self._persistent(runnable)
        self.stats.persistent_pruned += len(runnable) - len(chosen)
        todo = [b for b in chosen if b not in sleep]
        self.stats.sleep_pruned += len(chosen) - len(todo)
        return todo

    def _persistent(self, runnable: list[Block]) -> list[Block]:
        """The runnable blocks of one rank that nothing other ranks still do can interact with
        (all runnable blocks when no rank qualifies)."""
        if not self.reduce:
            return runnable
        by_rank: dict[int, list[Block]] = {}
        for b in runnable:
            by_rank.setdefault(b.inst.rank, []).append(b)
        if len(by_rank) < 2:
            return runnable
        space = self.space
        done = tuple(map(_complete, space.insts))
        others = self._others.get(done)
        if others is None:
            others = self._other_ranks_masks()
            if len(self._others) < 1 << 16:
                self._others[done] = others
        for r, blocks in sorted(by_rank.items(), key=lambda kv: len(kv[1])):
            pr = pw = pa = 0
            for b in blocks:
                si = b.inst.si
                pr |= space.read_mask[si][r]
                pw |= space.write_mask[si][r]
                pa |= space.add_mask[si][r]
            orr, ow, oa = others.get(r, (0, 0, 0))
            if pw & (orr | ow | oa) or ow & (pr | pa) or pa & orr or oa & pr:
                continue
            if any(
                rank == r and (ow | oa) >> space.slot(r, sig) & 1 for rank, sig, _key in space.eng.spinners
            ):
                continue
            return blocks
        return runnable

    def _other_ranks_masks(self) -> dict[int, tuple[int, int, int]]:
        """Per rank: what the unfinished tasks of every *other* rank may read, write and add
        (a function of which task instances are complete, so :meth:`_persistent` caches it)."""
        space = self.space
        rem: dict[int, tuple[int, int, int]] = {}
        for inst in space.insts:
            if not inst.complete:
                si, r = inst.si, inst.rank
                rr, rw, ra = rem.get(r, (0, 0, 0))
                rem[r] = (
                    rr | space.read_mask[si][r],
                    rw | space.write_mask[si][r],
                    ra | space.add_mask[si][r],
                )
        others = {}
        for r in range(space.ranks):
            orr = ow = oa = 0
            for r2, (xr, xw, xa) in rem.items():
                if r2 != r:
                    orr |= xr
                    ow |= xw
                    oa |= xa
            others[r] = (orr, ow, oa)
        return others

    # ------------------------------------------------------------------ properties

    def _end_state(self, parent: _Frame, via: list[Decision], depth: int) -> None:
        space = self.space
        if not space.complete():
            if self.exhaustive:
                self.deadlocks.add(space.stuck_signature())
            self._found(
                Violation(
                    "deadlock", "no block can make progress and work remains", parent.path() + via, depth
                )
            )
            return
        self.stats.terminals += 1
        key = space.outputs()
        seen = self.outputs.get(key)
        if seen is not None:
            if depth < seen[0]:
                self.outputs[key] = (depth, parent.path() + via)
            return
        path = parent.path() + via
        self.outputs[key] = (depth, path)
        self.stats.outputs = len(self.outputs)
        if len(self.outputs) > 1 and self.determinism:
            ref_key, (ref_depth, ref_path) = next(iter(self.outputs.items()))
            detail = self._first_difference(ref_key, key)
            msg = (
                f"two complete schedules give different bits: {detail['tensor']} on rank {detail['rank']} "
                f"at {detail['index']}: {detail['reference']} vs {detail['value']}"
            )
            self._found(Violation("nondeterminism", msg, path, depth, reference=ref_path, detail=detail))
            return
        if self.check_outputs is not None:
            failures = self.check_outputs(space.result_arrays())
            if failures:
                self._found(Violation("golden", "; ".join(failures), path, depth))

    def _first_difference(self, ref: tuple[bytes, ...], got: tuple[bytes, ...]) -> dict[str, Any]:
        space = self.space
        for slot, a_raw, b_raw in zip(space.output_slots, ref, got, strict=True):
            if a_raw == b_raw:
                continue
            r, ti = divmod(slot, space.nt)
            arr = space.arrays[slot]
            a = np.frombuffer(a_raw, dtype=arr.dtype).reshape(arr.shape)
            b = np.frombuffer(b_raw, dtype=arr.dtype).reshape(arr.shape)
            bits = np.dtype(f"u{arr.dtype.itemsize}") if arr.dtype.itemsize in (1, 2, 4, 8) else None
            diff = (a.view(bits) != b.view(bits)) if bits is not None else (a != b)
            idx = tuple(int(i) for i in np.argwhere(diff)[0]) if a.ndim else ()
            return {
                "tensor": space.program.tensors[ti].name,
                "rank": r,
                "index": list(idx),
                "reference": repr(a[idx].item()),
                "value": repr(b[idx].item()),
                "elements": int(diff.sum()),
            }
        raise AssertionError("outputs differ but no element does")  # pragma: no cover

    def _error(self, f: _Frame, err: SimulatorError, via: list[Decision]) -> None:
        """A kernel raised (or a block passed the step limit) in this transition."""
        kind = "step-limit" if isinstance(err, StepLimitExceeded) else "kernel-error"
        self._found(Violation(kind, str(err), f.path() + via, f.depth + 1))

    def _found(self, v: Violation) -> None:
        if self.best is None or v.depth < self.best.depth:
            self.best = v
        if self.exhaustive:
            return
        if self.shortest:
            self.bound = self.best.depth
        else:
            self.stack.clear()
