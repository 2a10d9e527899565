"""Remembered block steps: a step that ends its block, replayed instead of run when its inputs recur.

Most transitions of a search run a block to its end in one step (a push, a gather, a gate, a
waiter whose cell now holds); the same block meets the same memory in many states that differ
elsewhere (the interleavings partial-order reduction cannot merge, other ranks, other queues).
Such a step is a function of the block, of its *trail* (what its generator read at each earlier
step, which fixes the generator's locals - the premise of generator rebuilds and fingerprints,
:mod:`runtime.verify.space`) and of the bytes of every array its task may read, write or add
to on its rank (the static footprint the reductions already rely on,
:mod:`runtime.verify.footprint`): what the kernel computes, what it leaves in memory, the
notifies it sends and the effect partial-order reduction sees.  So the first time such a key
runs it is recorded, and the next time the block's generator is replaced by a *replayer*: the
engine steps it as it steps any kernel (same wait re-check, step counters, ``_finish`` and
dispatch), and the replayer puts the recorded bytes into memory and repeats the notifies.

Notifies are repeated one by one, each after setting its cell to the value it held right after
the real notify, so the spinners a notify wakes are exactly those it woke in the real run (a
wake re-checks only the notified cell).  Only steps that end the block in one resume are
recorded: a step after which the block waits, yields or sits at a barrier leaves a generator
whose locals a replay cannot give back, so it always runs for real (and so does a kernel that
is a plain function, which the engine runs without resuming it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from runtime.machine import DONE, Block

if TYPE_CHECKING:  # pragma: no cover
    from runtime.verify.effects import Effect, Observer
    from runtime.verify.space import Space

#: Distinct (block, memory) steps remembered per search; 0 turns memoisation off.
MEMO_LIMIT = 1 << 16
#: Bytes of memory the remembered steps may hold on to (keys and results, counted as if none
#: were shared with the search's snapshots): a layer with large arrays remembers fewer steps.
MEMO_BYTES = 1 << 28


class Step:
    """A recorded step: its effect, what the ctx saw (for the story and the ranks it
    touched), the notified cells with their value right after each notify, and the bytes of
    every array the step wrote."""

    __slots__ = ("effect", "observer", "cells", "post", "ranks")

    def __init__(
        self, effect: Effect, observer: Observer, post: tuple[tuple[int, bytes], ...], ranks: frozenset[int]
    ) -> None:
        self.effect = effect
        self.observer = observer
        self.cells = tuple(observer.cells)
        self.post = post
        self.ranks = ranks


class StepMemo:
    """The recorded steps of one :class:`runtime.verify.space.Space`."""

    def __init__(self, space: Space, limit: int) -> None:
        self.space = space
        self.limit = limit
        self.steps: dict[tuple, Step] = {}
        self.hits = 0
        self.budget = MEMO_BYTES
        n = len(space.arrays)
        self.slots = [
            [
                tuple(i for i in range(n) if (rm | wm | am) >> i & 1)
                for rm, wm, am in zip(reads, writes, adds, strict=True)
            ]
            for reads, writes, adds in zip(space.read_mask, space.write_mask, space.add_mask, strict=True)
        ]

    def key(self, block: Block) -> tuple | None:
        """The key of ``block``'s next step: the block, its trail (what its generator saw so
        far, which fixes the generator's locals) and the bytes of its task's arrays on its rank.
        None when the step will not resume the kernel (a woken spinner whose cell no longer
        holds goes back to spinning) or the memo is off."""
        if not self.limit:
            return None
        w = block.wait
        if w is not None and not w.satisfied():
            return None
        inst = block.inst
        space = self.space
        live = space.live
        return (block, space.trails.get(block, ()), tuple([live[i] for i in self.slots[inst.si][inst.rank]]))

    def record(
        self,
        key: tuple,
        block: Block,
        steps0: int,
        effect: Effect,
        observer: Observer,
        dirty: int,
        ranks: set[int],
    ) -> None:
        """After a real step from ``key``: remember it if it finished in one resume."""
        if block.state != DONE or block.steps != steps0 + 1 or len(self.steps) >= self.limit:
            return
        live = self.space.live
        post = []
        size = sum(map(len, key[2]))
        i = 0
        while dirty:
            if dirty & 1:
                post.append((i, live[i]))
                size += len(live[i])
            dirty >>= 1
            i += 1
        if size > self.budget:
            return
        self.budget -= size
        self.steps[key] = Step(effect, observer, tuple(post), frozenset(ranks))

    def replayer(self, block: Block, step: Step) -> Iterator[Any]:
        """A generator that, resumed once by the engine, does what the recorded step did."""
        space = self.space
        eng, mems = space.eng, space.mems
        for peer, signal, cell, value in step.cells:
            mems[peer].arrays[signal][cell] = value
            eng.notified(block, peer, signal, cell)
        live, views = space.live, space.views
        for i, data in step.post:
            view = views[i]
            if view is not None:  # (a kernel of unknown footprint "writes" read-only inputs too)
                view[:] = data  # unconditionally: the notifies above changed cells in place
            live[i] = data
        return
        yield  # unreachable: makes this a generator the engine resumes like a kernel
