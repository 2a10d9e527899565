"""What one step touched, element by element, and when two steps commute.

Partial-order reduction skips one of two interleavings of steps that *commute*: executed in
either order from the same state they give the same state, and neither enables or disables the
other's effect.  A step's *effect* says which elements of which (rank, tensor) arrays it read,
wrote and added to, as boxes (a ``(lo, hi)`` range per dimension; ``None`` is the whole array):

* for a kernel whose static footprint is *exact* (every tensor access a direct subscript of
  ``ctx.t(...)``/``ctx.peer(...)`` or of an alias, :mod:`runtime.verify.footprint`), ``ctx``
  hands out :class:`Tracked` arrays that report every subscript, so the boxes are exactly the
  elements touched;
* otherwise the kernel's static footprint gives whole arrays;
* notifies, waits and atomics are always observed on ``ctx``, down to the cell or region.

Two effects conflict when a write overlaps anything of the other, or an add overlaps a read;
adds commute with adds - AtomicAdd notifies and integer atomics - but floating-point atomics
are writes, since their sum depends on the order (that is what determinism checking is for).
Two steps of one rank that both changed its shared scheduler state (a block finished and freed
its cores, or a barrier moved) never commute: the dispatch that follows sees them in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.memory import BlockContext, cell_key

if TYPE_CHECKING:  # pragma: no cover
    from runtime.verify.space import Space

Box = tuple[tuple[int, int], ...] | None  # None: the whole array
EMPTY: Box = ()


def box(key: Any, shape: tuple[int, ...]) -> Box:
    """The elements ``array[key]`` touches, as a range per dimension (None when it cannot be
    told - fancy or boolean indexing - which stands for the whole array)."""
    if key.__class__ is tuple and len(key) == len(shape):
        # what generated kernels subscript with: one unit-step slice or plain int per dimension
        out: list[tuple[int, int]] = []
        for k, n in zip(key, shape, strict=True):
            c = k.__class__
            if c is slice:
                start, stop, step = k.indices(n)
                if step != 1:
                    return _box(key, shape)
                if stop <= start:
                    return EMPTY
                out.append((start, stop))
            elif c is int:
                out.append((k + n, k + n + 1) if k < 0 else (k, k + 1))
            else:
                return _box(key, shape)
        return tuple(out)
    return _box(key, shape)


def _box(key: Any, shape: tuple[int, ...]) -> Box:
    """:func:`box` for any key."""
    if not isinstance(key, tuple):
        key = (key,)
    out: list[tuple[int, int]] = []
    dim = 0
    nd = len(shape)
    for k in key:
        if isinstance(k, slice):
            if dim >= nd:
                return None
            start, stop, step = k.indices(shape[dim])
            if step < 0:
                start, stop = stop + 1, start + 1
            elif step != 1:
                stop = min(stop, start + (stop - start + step - 1) // step * step)
            if stop <= start:
                return EMPTY
            out.append((start, stop))
            dim += 1
        elif isinstance(k, int | np.integer) and not isinstance(k, bool):
            if dim >= nd:
                return None
            i = int(k)
            if i < 0:
                i += shape[dim]
            out.append((i, i + 1))
            dim += 1
        elif k is Ellipsis:
            explicit = sum(1 for x in key if x is not None and x is not Ellipsis)
            for _ in range(max(nd - explicit, 0)):
                out.append((0, shape[dim]))
                dim += 1
        elif k is None:
            continue
        else:
            return None
    while dim < nd:
        out.append((0, shape[dim]))
        dim += 1
    return tuple(out)


def overlap(a: Box, b: Box) -> bool:
    if a is None or b is None:
        return a != EMPTY and b != EMPTY
    if not a or not b:
        return False
    return all(lo1 < hi2 and lo2 < hi1 for (lo1, hi1), (lo2, hi2) in zip(a, b, strict=False))


#: More distinct boxes than this on one array in one step and the step touches it whole:
#: a kernel reading a table element by element need not cost a box per element.
BOX_LIMIT = 8


class Observer:
    """What one step did, as ``ctx`` saw it: boxes read, written and added to by ``ctx``
    operations, peers touched by kernels that are not tracked, and the notifies.  (The
    subscripts of tracked arrays go to :class:`Subscripts`.)"""

    __slots__ = ("reads", "writes", "adds", "peers", "notifies", "cells")

    def __init__(self) -> None:
        self.reads: list[tuple[int, Box]] = []
        self.writes: list[tuple[int, Box]] = []
        self.adds: list[tuple[int, Box]] = []
        self.peers: list[tuple[str, int]] = []
        self.notifies: list[tuple[str, int, tuple[int, ...], str, int]] = []
        self.cells: list[tuple[int, str, tuple[int, ...], int]] = []  # per notify: the cell after it


class Subscripts:
    """The raw subscripts of tracked arrays, one read list and one write list per array slot,
    turned into boxes once, after the step.

    A :class:`Tracked` array appends to its slot's lists directly (a kernel reading a table
    row by row makes hundreds of subscripts a step; one ``append`` each is all they cost).
    The lists are emptied when a step starts (:meth:`start`), so what a generator rebuild
    subscripted between two steps is never taken for a step's."""

    __slots__ = ("lists",)

    def __init__(self) -> None:
        self.lists: dict[int, tuple[list[Any], list[Any]]] = {}

    def of(self, slot: int) -> tuple[list[Any], list[Any]]:
        got = self.lists.get(slot)
        if got is None:
            self.lists[slot] = got = ([], [])
        return got

    def start(self) -> None:
        for reads, writes in self.lists.values():
            if reads:
                reads.clear()
            if writes:
                writes.clear()


class Tracked:
    """An array as a tracked kernel sees it: every subscript is reported, then performed."""

    __slots__ = ("_arr", "_reads", "_writes")

    def __init__(self, arr: np.ndarray, lists: tuple[list[Any], list[Any]]) -> None:
        self._arr = arr
        self._reads, self._writes = lists

    def __getitem__(self, key: Any) -> Any:
        self._reads.append(key)
        return self._arr[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._writes.append(key)
        self._arr[key] = value


class ExploreContext(BlockContext):
    """``ctx`` for explored runs: the same operations, each also reported to the observer.

    What ``t`` and ``peer`` hand out depends only on the name and the rank (arrays never move:
    restores copy into them), so it is made once per context and name - a kernel that looks a
    peer's window up per row does not pay the checks and a new :class:`Tracked` per row.
    Only lookups that passed the checks are kept, so a bad name or peer raises every time."""

    __slots__ = ("_handles",)

    def __init__(self, *args: Any) -> None:
        BlockContext.__init__(self, *args)
        self._handles: dict[Any, Any] = {}

    def _space(self) -> Space:
        return self._engine.space

    def t(self, name: str) -> Any:
        got = self._handles.get(name)
        if got is not None:
            return got
        arr = BlockContext.t(self, name)
        sp = self._space()
        if self.task in sp.exact_tasks and arr.flags.writeable:
            got = Tracked(arr, sp.subscripts.of(sp.slot(self.rank, name)))
        else:
            got = arr
        if name.__class__ is str:
            self._handles[name] = got
        return got

    def peer(self, name: str, peer_rank: int) -> Any:
        if peer_rank.__class__ is int:
            key: Any = (name, peer_rank)
        elif isinstance(peer_rank, np.integer):  # a rank read from a routing table
            key = (name, int(peer_rank))
        else:
            key = None
        got = self._handles.get(key) if key is not None else None
        if got is None:
            arr = BlockContext.peer(self, name, peer_rank)
            sp = self._space()
            if self.task in sp.exact_tasks:
                got = (True, Tracked(arr, sp.subscripts.of(sp.slot(int(peer_rank), name))))
            else:
                got = (False, arr)
            if key is not None and name.__class__ is str:
                self._handles[key] = got
        tracked, handle = got
        if not tracked:
            obs = self._engine.space.eng.observer
            if obs is not None:
                obs.peers.append((name, int(peer_rank)))
        return handle

    def atomic_add(self, name: str, index: Any, value: Any, peer: int | None = None) -> None:
        sp = self._space()
        obs = sp.eng.observer
        if obs is not None:
            r = self.rank if peer is None else int(peer)
            slot = sp.slot(r, name)
            where = (slot, box(index, sp.arrays[slot].shape))
            (obs.writes if name in sp.float_tensors else obs.adds).append(where)
        BlockContext.atomic_add(self, name, index, value, peer)

    def notify(self, signal: str, index: Any, peer: int, value: int = 1, op: str = "add") -> None:
        sp = self._space()
        obs = sp.eng.observer
        if obs is not None:
            key = cell_key(index)
            obs.notifies.append((signal, int(peer), key, op, int(value)))
            where = (sp.slot(int(peer), signal), tuple((k, k + 1) for k in key))
            (obs.adds if op == "add" else obs.writes).append(where)
        BlockContext.notify(self, signal, index, peer, value, op)
        if obs is not None:
            p = int(peer)
            obs.cells.append((p, signal, key, int(self._mems[p].arrays[signal][key])))

    def wait(self, signal: str, index: Any, cmp: str = "ge", expected: int = 1) -> Any:
        sp = self._space()
        obs = sp.eng.observer
        if obs is not None:
            obs.reads.append((sp.slot(self.rank, signal), tuple((k, k + 1) for k in cell_key(index))))
        return BlockContext.wait(self, signal, index, cmp, expected)


class Rebuilding:
    """Stands in for the engine while a generator is replayed: nothing is observed or woken."""

    observer = None

    def __init__(self, space: Space) -> None:
        self.space = space

    def notified(self, *args: Any) -> None:
        return None


class Effect:
    """What one transition touched: per kind (reads, writes, adds) a mask of array slots and
    the boxes within them (a slot in the mask without boxes is touched whole)."""

    __slots__ = ("rank", "sched", "reads", "writes", "adds", "rbox", "wbox", "abox")

    def __init__(self, rank: int, sched: bool) -> None:
        self.rank = rank
        self.sched = sched
        self.reads = self.writes = self.adds = 0
        self.rbox: dict[int, list[Box]] = {}
        self.wbox: dict[int, list[Box]] = {}
        self.abox: dict[int, list[Box]] = {}

    def whole(self, kind: str, mask: int) -> None:
        """Mark every slot of ``mask`` as touched whole."""
        boxes = getattr(self, kind[0] + "box")
        setattr(self, kind, getattr(self, kind) | mask)
        i = 0
        while mask:
            if mask & 1:
                boxes[i] = [None]
            mask >>= 1
            i += 1

    def add(self, kind: str, slot: int, b: Box) -> None:
        if b == EMPTY:
            return
        boxes = getattr(self, kind[0] + "box")
        setattr(self, kind, getattr(self, kind) | 1 << slot)
        have = boxes.get(slot)
        if have is None:
            boxes[slot] = [b]
        elif have != [None] and b not in have:
            if b is None or len(have) >= BOX_LIMIT:
                boxes[slot] = [None]
            else:
                have.append(b)

    def add_subscripts(self, kind: str, slot: int, keys: list[Any], shape: tuple[int, ...]) -> None:
        """Subscripts ``keys`` of a tracked kernel on array ``slot``; an array subscripted more
        than ``BOX_LIMIT`` times is taken whole without looking at the keys."""
        if len(keys) > BOX_LIMIT:
            self.add(kind, slot, None)
        else:
            for k in keys:
                self.add(kind, slot, box(k, shape))

    def independent(self, o: Effect) -> bool:
        """Do the two transitions commute (and neither disables the other)?"""
        if self.rank == o.rank and self.sched and o.sched:
            return False
        return not (
            _clash(self.wbox, self.writes, o, (o.rbox, o.wbox, o.abox))
            or _clash(o.wbox, o.writes, self, (self.rbox, self.abox))
            or _clash(self.abox, self.adds, o, (o.rbox,))
            or _clash(o.abox, o.adds, self, (self.rbox,))
        )


def _clash(
    mine: dict[int, list[Box]], mask: int, other: Effect, theirs: tuple[dict[int, list[Box]], ...]
) -> bool:
    common = mask & (other.reads | other.writes | other.adds)
    if not common:
        return False
    for slot, boxes in mine.items():
        if not common >> slot & 1:
            continue
        for table in theirs:
            for b in table.get(slot, ()):
                for a in boxes:
                    if overlap(a, b):
                        return True
    return False
