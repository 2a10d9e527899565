"""D117: a waiter of a later round can spin while a notifier of an earlier round it needs has not run.

## What it catches

A wait whose threshold grows with the epoch (``wait done[src] >= epoch``: a counter that every
round adds to), so that round r + k's wait needs the notifies of every earlier round too,
while a task whose notifies feed those cells -- the waiting task itself, when it notifies and
then waits -- is not ordered before the waiter of a later round. The runtime adds no edge
between rounds: round r + 1's tasks are ordered after round r's only through tensor edges the
tensor map carries into the next round (``lowering.checks.rounds``), so unless a chain of such
edges leads from the notifier of round r to the waiter of round r + k, for every k the task
ring holds, the two can be in flight together. Left out: notifiers on other core kinds than
the waiter (they cannot be parked behind it), and notifiers with no producer in their round
on the waiter's core kind: they are ready when their round is submitted, so round r's
instance enters the ready queue ahead of every task of a later round and takes a core first.

## Why it breaks on the device

Round r + 1's waiter can be dispatched first -- its producers of round r + 1 finished early --
and spin holding its core, while round r's instance of the notifier is placed in that very
core's pending slot, behind the spinner: a pending task runs only after the running one ends.
Round r's notify never goes out, the peers' round r + 1 waits never see it, and when two ranks
do this the all-to-all deadlocks. D101 cannot see it: within one round the order is right.
``dslc verify --rounds 3`` finds it in ``bad.dsl``.

## Example

    task meta on aiv after work {                   # notifies its peers, then waits for theirs
      for dst in range(EP) { if dst != rank { notify done[rank] @ dst += 1 } }
      for src in range(EP) { if src != rank { wait done[src] >= epoch } }
    }

## Use instead

    task meta on aiv after work, prev(meta) { ... } # each round's meta after the previous round's

``after prev(t)`` orders a task after ``t``'s instance of the previous round (through an
ordering token, ``docs/language.md``); a tensor read-modify-write both rounds touch does the
same.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: rounds as far apart as the task ring holds (16,384 task slots over the layer's tasks,
followed at most 16 rounds apart; the finding says when it stopped there): the instances of
every round that no chain of cross-round edges orders can be in flight together.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.handshake.need import needed_notifiers, shares_cores
from lowering.checks.order import predecessors
from lowering.checks.protocol import counting, instances
from lowering.checks.protocol.instances import Unchecked, Uncountable
from lowering.checks.rounds import ordered_before
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, SignalOp, Task
from lowering.source import Diagnostic

CODE = "D117"
NAME = "waiter_overtakes_previous_round"
FAMILY = "handshake"
SEVERITY = "error"
SUMMARY = "a waiter of a later round can spin before a notifier of an earlier round it needs has run"
COUNTS = True


def _counts_every_round(graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env) -> bool:
    """The threshold grows with the epoch on a cell the rounds keep adding to."""
    try:
        cells = counting.analyse_wait(graph, ctx, task, wait, env)
    except (Uncountable, Unchecked):
        return False
    return any(c.slope > 0 and not c.cleared and not c.flag for c in cells)


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    producers = predecessors(graph, ctx)
    for waiter in graph.tasks:
        reported: set[str] = set()
        for wait in waiter.waits:
            if not _counts_every_round(graph, ctx, waiter, wait, env):
                continue
            earlier = ordered_before(graph, ctx, waiter.name)
            for name in sorted(needed_notifiers(graph, waiter, wait, env)):
                notifier = graph.task(name)
                k = earlier.first_gap(name)
                if k is None or name in reported or not shares_cores(notifier, waiter):
                    continue
                if notifier.core == waiter.core and not producers[name]:
                    continue  # ready when its round is submitted: ahead of any later round in the queue
                reported.add(name)
                yield _finding(waiter, wait, notifier, k, earlier.bounded)


def _finding(waiter: Task, wait: SignalOp, notifier: Task, k: int, bounded: bool) -> Diagnostic:
    later = "r + 1" if k == 1 else f"r + {k}"
    who = "its own instance" if notifier.name == waiter.name else notifier.name
    shape = waiter.core.upper()
    note = f" (rounds followed up to {k} apart)" if bounded else ""
    return finding(
        CODE,
        SEVERITY,
        waiter.header_span,
        f"{waiter.name} of round {later} can start before {who} of round r has run: no edge orders them "
        f"across rounds, and the threshold `{instances.expr_text(wait.expected)}` counts every round's "
        f"notifies on {wait.signal}, round r's included. {waiter.name} can spin holding an {shape} core while "
        f"{notifier.name} of round r sits in that core's pending slot; ranks that do this wait for each other "
        f"forever{note}",
        fix=f"add `after prev({notifier.name})` to task {waiter.name} (each round's {waiter.name} after the "
        f"previous round's {notifier.name})",
        related=((wait.span, "the wait"), (notifier.header_span, f"the notifier ({notifier.name})")),
        data=(("task", waiter.name), ("add_after", f"prev({notifier.name})")),
    )
