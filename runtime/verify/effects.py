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
    """What one step did, as ``ctx`` saw it: the subscripts of tracked arrays read and written
    (raw keys, turned into boxes once, after the step), boxes read, written and added to by
    ``ctx`` operations, peers touched by kernels that are not tracked, and the notifies."""

    __slots__ = ("read_keys", "write_keys", "reads", "writes", "adds", "peers", "notifies")

    def __init__(self) -> None:
        self.read_keys: list[tuple[int, Any]] = []
        self.write_keys: list[tuple[int, Any]] = []
        self.reads: list[tuple[int, Box]] = []
        self.writes: list[tuple[int, Box]] = []
        self.adds: list[tuple[int, Box]] = []
        self.peers: list[tuple[str, int]] = []
        self.notifies: list[tuple[str, int, tuple[int, ...], str, int]] = []


class Tracked:
    """An array as a tracked kernel sees it: every subscript is reported, then performed."""

    __slots__ = ("_arr", "_slot", "_eng")

    def __init__(self, arr: np.ndarray, slot: int, eng: Any) -> None:
        self._arr = arr
        self._slot = slot
        self._eng = eng

    def __getitem__(self, key: Any) -> Any:
        obs = self._eng.observer
        if obs is not None:
            obs.read_keys.append((self._slot, key))
        return self._arr[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        obs = self._eng.observer
        if obs is not None:
            obs.write_keys.append((self._slot, key))
        self._arr[key] = value


class ExploreContext(BlockContext):
    """``ctx`` for explored runs: the same operations, each also reported to the observer."""

    __slots__ = ()

    def _space(self) -> Space:
        return self._engine.space

    def t(self, name: str) -> Any:
        arr = BlockContext.t(self, name)
        sp = self._space()
        if self.task in sp.exact_tasks and arr.flags.writeable:
            return Tracked(arr, sp.slot(self.rank, name), sp.eng)
        return arr

    def peer(self, name: str, peer_rank: int) -> Any:
        arr = BlockContext.peer(self, name, peer_rank)
        sp = self._space()
        if self.task in sp.exact_tasks:
            return Tracked(arr, sp.slot(int(peer_rank), name), sp.eng)
        obs = sp.eng.observer
        if obs is not None:
            obs.peers.append((name, int(peer_rank)))
        return arr

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

    def add_keys(self, kind: str, keys: list[tuple[int, Any]], shapes: list[tuple[int, ...]]) -> None:
        """Subscripts ``(slot, key)`` of a tracked kernel; a slot subscripted more than
        ``BOX_LIMIT`` times is taken whole without looking at the keys."""
        per: dict[int, list[Any]] = {}
        for slot, key in keys:
            per.setdefault(slot, []).append(key)
        for slot, ks in per.items():
            if len(ks) > BOX_LIMIT:
                self.add(kind, slot, None)
            else:
                shape = shapes[slot]
                for k in ks:
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
