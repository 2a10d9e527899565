"""D115: a barrier or a wait that only some ranks (or, for a barrier, some blocks) reach.

## What it catches

Synchronisation whose execution count differs between the participants that must all
take part (docs/runtime-semantics.md §21.1, rule R13), counted exactly at every admissible parameter
point:

- a ``wait``: some ranks wait for nothing in the whole round while others wait --
  ``if rank == 0 { wait ... }`` with no wait on the other ranks. Ranks need not run the same
  waits: the usual ``for src in range(EP) { if src != rank { wait ... } }`` runs EP - 1 waits
  on every rank, and a root that waits for its leaves while each leaf waits for the root's
  release paces every rank once per round; both are fine (whether the thresholds are
  reachable is D103's question);
- a ``barrier`` (an in-kernel syncall across the blocks of the task): the number of
  barriers a block passes differs between ranks, between blocks (a condition on
  ``block``), or depends on data that blocks may see differently. A condition on data every
  block reads alike -- an element of a layer input (no task writes it) at an index that does
  not depend on ``block`` -- sends all blocks the same way and is fine.

## Why it breaks on the device

A barrier holds every arrived block until all of them arrive: a block that skips it never
comes, and the others hold their cores forever (507018). Between ranks, every rank runs
the same graph and the handshakes are written for that: a rank that skips its side of an
exchange leaves the others spinning on credits that never come, and a rank that is not
paced by a wait runs rounds ahead and overwrites the windows its peers are still reading.
pypto's protocol rule: rank-divergent control flow around barriers deadlocks.

## Example

    task sync on aiv after push {
      if rank == 0 {                                          # only the root waits
        for src in range(1, EP) { wait done[src] >= epoch }
      }
    }

## Use instead

    task sync on aiv after push {
      for src in range(EP) { if src != rank { wait done[src] >= epoch } }   # every rank, EP - 1 waits
    }

## What dslc verify shows

``dslc verify`` finds the deadlock of ``bad_2.dsl`` (a barrier half the blocks reach). It
proves ``bad.dsl`` and ``bad_3.dsl`` deadlock-free at EP 2: in ``bad.dsl`` the unpaced ranks hang
nothing while counters are monotonic (the harm is a rank running ahead into windows it
reuses), and the barrier of ``bad_3.dsl`` spans the blocks of one grid on one rank, which all
take the same branch.

## Parameter and round coverage

Parameters: every admissible point of each structure class, the compiled point first, thinned
beyond 256 points; a point with more ranks, or more ranks x blocks for a barrier, than the
signal analysis lists (400,000 executions) is not judged there.
Rounds: one round (each round must pace every rank).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from lowering.checks import signals
from lowering.checks.bodies import BlockUniform
from lowering.checks.protocol import instances
from lowering.checks.protocol.instances import Uncountable
from lowering.checks.rule import CheckContext, finding
from lowering.checks.signals import MAX_INSTANCES
from lowering.ir import Graph, Task
from lowering.source import Diagnostic

CODE = "D115"
NAME = "rank_divergent_barrier"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "a barrier or a wait that only some ranks (or blocks) reach"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def _ranks(values: list[int]) -> str:
    values = sorted(values)
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ", ".join(map(str, values))


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


def _split(counts: dict[int, int]) -> str:
    by_count: dict[int, list[int]] = {}
    for k, n in counts.items():
        by_count.setdefault(n, []).append(k)
    parts = [
        f"{_times(n)} on rank{'s' if len(ks) > 1 else ''} {_ranks(ks)}" for n, ks in sorted(by_count.items())
    ]
    return ", ".join(parts)


def _conds_text(op) -> str:
    conds = [instances.expr_text(c.expr) for c in op.conds]
    loops = [
        f"{lp.var} in {instances.expr_text(lp.start)}..{instances.expr_text(lp.stop)}" for lp in op.loops
    ]
    return "; ".join([f"under `{c}`" for c in conds] + [f"in loop {lp}" for lp in loops]) or "unconditionally"


def _uniform(uniform: BlockUniform, op) -> bool:
    """Whether every block of the task evaluates the conditions and loop bounds of ``op`` alike."""
    exprs = [c.expr for c in op.conds] + [e for lp in op.loops for e in (lp.start, lp.stop, lp.step)]
    return all(uniform.expr(e) for e in exprs)


def _barriers(graph: Graph, task: Task, env: dict, where: str) -> Iterator[Diagnostic]:
    nranks = instances.evaluate_or_raise(graph.ranks, env, "ranks")
    blocks = instances.evaluate_or_raise(task.grid, env, "grid")
    total: Counter = Counter()
    per_op: dict[int, Counter] = {}
    uniform = None
    for op in task.barriers:
        try:
            try:
                runs = list(signals.run(graph, task, op.loops, op.conds, env, ignore_predicate=True))
            except Uncountable:
                uniform = uniform or BlockUniform(graph, task)
                if not _uniform(uniform, op):
                    raise
                # every block evaluates the data alike: each takes the same branch and trip count
                runs = list(signals.run(graph, task, op.loops, op.conds, env, lenient=True))
            c = Counter((r, b) for _s, r, b in runs)
        except Uncountable as err:
            yield finding(
                CODE,
                SEVERITY,
                op.span,
                f"whether a block of {task.name} reaches this barrier depends on data ({err.reason}){where}: a block that "
                f"skips it never arrives and the blocks at the barrier hold their cores forever",
                fix="make the barrier unconditional, or hoist the data-dependent branch out of the barrier's task",
            )
            return
        per_op[op.order] = c
        total.update(c)
    if nranks * blocks > MAX_INSTANCES:
        return  # too many to list (see the coverage section)
    everyone = [(r, b) for r in range(nranks) for b in range(blocks)]
    if len({total[k] for k in everyone}) <= 1:
        return
    op = next(
        (o for o in task.barriers if len({per_op[o.order][k] for k in everyone}) > 1),
        task.barriers[0],
    )
    c = per_op[op.order]
    for r in range(nranks):
        per_block = {b: c[(r, b)] for b in range(blocks)}
        if len(set(per_block.values())) > 1:
            reached = [b for b, n in per_block.items() if n == max(per_block.values())]
            skipped = [b for b, n in per_block.items() if n != max(per_block.values())]
            yield finding(
                CODE,
                SEVERITY,
                op.span,
                f"blocks {_ranks(reached)} of {task.name} reach this barrier but block{'s' if len(skipped) > 1 else ''} "
                f"{_ranks(skipped)} {'do' if len(skipped) > 1 else 'does'} not ({_conds_text(op)}){where}: the blocks at the "
                f"barrier wait forever for the ones that skip it",
                fix="make the barrier unconditional in every block of the task",
            )
            return
    per_rank = {r: c[(r, 0)] for r in range(nranks)}
    yield finding(
        CODE,
        SEVERITY,
        op.span,
        f"this barrier in {task.name} runs {_split(per_rank)} ({_conds_text(op)}){where}: the ranks run different "
        f"synchronisation, so the ones that skip it run ahead of the exchange the barrier paces",
        fix="make the barrier independent of `rank`",
    )


def _unpaced(graph: Graph, env: dict, where: str) -> Iterator[Diagnostic]:
    """Waits that only some ranks perform, when other ranks wait nowhere in the round.

    The ranks need not run the same waits: a root that waits for its leaves and leaves that
    wait for the root's release are all paced once per round. What breaks is a rank that
    waits for nothing at all while its peers do."""
    nranks = instances.evaluate_or_raise(graph.ranks, env, "ranks")
    if nranks > MAX_INSTANCES:
        return  # too many ranks to list (see the coverage section)
    total: Counter = Counter()
    ops = []  # (task, signal, op, per-rank counts)
    for task in graph.tasks:
        for signal in sorted({w.signal for w in task.waits}):
            for w in (w for w in task.waits if w.signal == signal):
                try:
                    per_rank = Counter(r for _s, r, _b in signals.run(graph, task, w.loops, w.conds, env))
                except Uncountable:
                    return  # a wait count that depends on data: D103 reports those
                total.update(per_rank)
                ops.append((task, signal, w, per_rank))
    unpaced = [r for r in range(nranks) if total[r] == 0]
    if not unpaced or len(unpaced) == nranks:
        return
    task, signal, op, per_rank = next((o for o in ops if any(o[3][r] for r in range(nranks))), ops[0])
    counts = {r: sum(c[r] for t, sig, _w, c in ops if t is task and sig == signal) for r in range(nranks)}
    yield finding(
        CODE,
        SEVERITY,
        op.span,
        f"{task.name} waits on {signal} a different number of times per rank ({_split(counts)}; this wait "
        f"runs {_conds_text(op)}){where}, and rank{'s' if len(unpaced) > 1 else ''} {_ranks(unpaced)} "
        f"wait{'' if len(unpaced) > 1 else 's'} for nothing in the whole round: the ranks that skip their side "
        f"of the exchange are never paced, leave the others spinning on credits that never come, or run rounds "
        f"ahead and overwrite windows their peers still read",
        fix="give every rank a wait per round: the same waits (skip only the self peer, `if src != rank`), or a "
        "wait of its own (leaves wait for the root's release)",
    )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    reported: set = set()
    for env in instances.points(graph):
        where = instances.point_label(graph, env)
        found = [d for task in graph.tasks if task.barriers for d in _barriers(graph, task, env, where)]
        found += list(_unpaced(graph, env, where))
        for d in found:
            if d.span not in reported:
                reported.add(d.span)
                yield d
