"""Reachability between the tasks of a graph: which tasks are ordered before which.

Rules ask "is task a a transitive predecessor of task b?" many times, and a few need the
whole set of ancestors of a task. Materialising every ancestor set is quadratic in the
number of tasks (a 50,000-task chain holds 1.25 billion pairs), so the sets are stored as
compressed bitsets instead:

* Tasks are renumbered in a depth-first post-order over predecessors (a topological order
  in which a task's ancestors tend to be numbered just before it): the sinks are the roots,
  last submitted first, and the predecessors are visited deepest first, so that a long
  chain of work and what hangs off it are numbered together.
* The ancestor set of a task is an interval of that numbering plus a bitset,
  ``[lo, hi) | {base + i : bit i of mask}``. In that numbering a task's ancestors are mostly
  one run of numbers (the whole earlier pipeline, or the earlier part of its own chain when
  independent chains are interleaved), so the mask is a few bits wide, building every set
  costs a few big-integer operations per edge, and a membership test is O(1).

The sets are exact (the representation only compresses them), so every answer is the same
as with explicit sets; the worst case (no useful numbering) degrades to plain bitsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from itertools import chain

from lowering.ir import Graph


class Reach:
    """Transitive order of the tasks of one graph (its in-round edges, and ``extra`` (src, dst)
    pairs, each from a task submitted earlier to one submitted later)."""

    def __init__(self, graph: Graph, extra: Iterable[tuple[str, str]] = ()):
        names = [t.name for t in graph.tasks]
        position = {name: i for i, name in enumerate(names)}
        n = len(names)
        preds: list[list[int]] = [[] for _ in range(n)]
        succs: list[list[int]] = [[] for _ in range(n)]
        for src, dst in chain(((e.src, e.dst) for e in graph.edges), extra):
            s, d = position.get(src), position.get(dst)
            if s is None or d is None or s == d:
                continue
            preds[d].append(s)
            succs[s].append(d)
        preds = [sorted(set(p)) for p in preds]
        succs = [sorted(set(s)) for s in succs]
        self.names = names
        self.position = position  # submission index
        self.preds = preds
        self.succs = succs
        num = self._number(n, preds)
        self.num = num  # submission index -> number in the post-order
        by_num = [0] * n
        for i, k in enumerate(num):
            by_num[k] = i
        self.by_num = by_num  # number -> submission index
        sets: list[tuple[int, int, int, int]] = [_EMPTY] * n  # by number: (lo, hi, base, mask)
        for k in range(n):
            sets[k] = _union(sets, [num[p] for p in preds[by_num[k]]])
        self._sets = sets

    @staticmethod
    def _number(n: int, preds: list[list[int]]) -> list[int]:
        """Depth-first post-order over predecessors, deepest predecessor first."""
        depth = [0] * n
        for i in range(n):  # submission order is topological: predecessors come first
            for p in preds[i]:
                if depth[p] + 1 > depth[i]:
                    depth[i] = depth[p] + 1
        order = [sorted(p, key=lambda j: (depth[j], j)) for p in preds]  # popped from the end
        num = [-1] * n
        counter = 0
        for root in range(n - 1, -1, -1):
            if num[root] >= 0:
                continue
            num[root] = -2  # on the stack
            stack = [(root, list(order[root]))]
            while stack:
                node, pending = stack[-1]
                while pending and num[pending[-1]] != -1:
                    pending.pop()
                if pending:
                    nxt = pending.pop()
                    num[nxt] = -2
                    stack.append((nxt, list(order[nxt])))
                    continue
                stack.pop()
                num[node] = counter
                counter += 1
        return num

    # ------------------------------------------------------------ queries

    def before(self, a: str, b: str) -> bool:
        """Is ``a`` a transitive predecessor of ``b`` (``a`` is an ancestor of ``b``)?"""
        return self._in(self.num[self.position[a]], self.num[self.position[b]])

    def ordered(self, a: str, b: str) -> bool:
        """Is one of two tasks an ancestor of the other?"""
        na, nb = self.num[self.position[a]], self.num[self.position[b]]
        return self._in(na, nb) or self._in(nb, na)

    def number(self, name: str) -> int:
        """The task's number in the post-order (for :meth:`before_number`)."""
        return self.num[self.position[name]]

    def ancestor_set(self, k: int) -> tuple[int, int, int, int]:
        """The compressed ancestor set of task number ``k``: numbers ``lo <= x < hi``, and
        ``base + i`` for every bit ``i`` of ``mask`` (see the module docs)."""
        return self._sets[k]

    def before_number(self, x: int, k: int) -> bool:
        """:meth:`before` on numbers: is task number ``x`` an ancestor of task number ``k``?"""
        return self._in(x, k)

    def _in(self, x: int, k: int) -> bool:
        lo, hi, base, m = self._sets[k]
        if lo <= x < hi:
            return True
        return m != 0 and x >= base and (m >> (x - base)) & 1 == 1

    def ancestor_count(self, name: str) -> int:
        lo, hi, _base, m = self._sets[self.num[self.position[name]]]
        return hi - lo + m.bit_count()

    def ancestors(self, name: str) -> Iterator[str]:
        """Every ancestor of ``name`` (in no particular order)."""
        lo, hi, base, m = self._sets[self.num[self.position[name]]]
        names, by_num = self.names, self.by_num
        for x in range(lo, hi):
            yield names[by_num[x]]
        while m:
            low = m & -m
            yield names[by_num[base + low.bit_length() - 1]]
            m ^= low

    def ancestors_among(self, name: str, candidates: Iterable[str]) -> list[str]:
        """The ``candidates`` that are ancestors of ``name``, in the order given."""
        k = self.num[self.position[name]]
        return [c for c in candidates if self._in(self.num[self.position[c]], k)]

    def descendants_of(self, name: str) -> Iterator[str]:
        """Every descendant of ``name``, in submission order (a walk over successors)."""
        start = self.position[name]
        seen = {start}
        stack = [start]
        found: list[int] = []
        while stack:
            for s in self.succs[stack.pop()]:
                if s not in seen:
                    seen.add(s)
                    found.append(s)
                    stack.append(s)
        found.sort()
        return (self.names[i] for i in found)


_EMPTY = (0, 0, 0, 0)


def _union(sets: list[tuple[int, int, int, int]], preds: list[int]) -> tuple[int, int, int, int]:
    """The ancestor set of a task whose predecessors are ``preds`` (numbers), compressed: the
    largest interval of a predecessor's set, and every other member as a bitset."""
    if not preds:
        return _EMPTY
    best = max(preds, key=lambda p: (sets[p][1] - sets[p][0], sets[p][1]))
    lo, hi = sets[best][0], sets[best][1]
    parts: list[tuple[int, int]] = []  # (offset, bits)
    for p in preds:
        plo, phi, pbase, pm = sets[p]
        if p != best and phi > plo:
            parts.append((plo, (1 << (phi - plo)) - 1))
        if pm:
            parts.append((pbase, pm))
        parts.append((p, 1))
    base = min(offset for offset, _bits in parts)
    m = 0
    for offset, bits in parts:
        m |= bits << (offset - base)
    return _normalise(lo, hi, base, m)


def _normalise(lo: int, hi: int, base: int, m: int) -> tuple[int, int, int, int]:
    """Drop mask bits inside the interval, grow the interval over the runs of mask bits
    that touch it, and trim the mask's trailing zeros."""
    if hi <= lo:  # no interval yet: start one at the lowest member
        lo = hi = base
    top = base + m.bit_length()
    if lo < top and base < hi:  # members of the interval: not in the mask
        a, b = max(lo, base), min(hi, top)
        m &= ~(((1 << (b - a)) - 1) << (a - base))
    if hi >= base:  # members hi, hi + 1, ... join the interval
        r = m >> (hi - base)
        run = ((r + 1) & ~r).bit_length() - 1
        if run:
            m &= ~(((1 << run) - 1) << (hi - base))
            hi += run
    if lo > base:  # members lo - 1, lo - 2, ... join the interval
        below = m & ((1 << (lo - base)) - 1)
        gaps = ~below & ((1 << (lo - base)) - 1)
        run = (lo - base) - gaps.bit_length()
        if run:
            m &= ~(((1 << run) - 1) << (lo - base - run))
            lo -= run
    if not m:
        return lo, hi, 0, 0
    zeros = (m & -m).bit_length() - 1
    return lo, hi, base + zeros, m >> zeros


def reach(graph: Graph, cache: dict) -> Reach:
    """The :class:`Reach` of ``graph`` (built once per check context)."""
    r = cache.get("reach")
    if r is None:
        r = cache["reach"] = Reach(graph)
    return r


class AncestorSet(Set):
    """The ancestors of one task, as a read-only set backed by :class:`Reach`."""

    __slots__ = ("_reach", "_name")

    def __init__(self, r: Reach, name: str):
        self._reach = r
        self._name = name

    def __contains__(self, other: object) -> bool:
        r = self._reach
        i = r.position.get(other) if isinstance(other, str) else None
        return i is not None and r._in(r.num[i], r.num[r.position[self._name]])

    def __iter__(self) -> Iterator[str]:
        return self._reach.ancestors(self._name)

    def __len__(self) -> int:
        return self._reach.ancestor_count(self._name)

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> frozenset[str]:
        return frozenset(it)


class ReachMap(Mapping):
    """``m[name]``: a lazily built, read-only set per task (ancestors or descendants)."""

    def __init__(self, r: Reach, make_set: Callable[[Reach, str], Set]):
        self._reach = r
        self._make = make_set

    def __getitem__(self, name: str) -> Set:
        if name not in self._reach.position:
            raise KeyError(name)
        return self._make(self._reach, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._reach.names)

    def __len__(self) -> int:
        return len(self._reach.names)


def Ancestors(r: Reach) -> ReachMap:  # noqa: N802 - reads as the type it builds
    """The transitive predecessors of each task, computed lazily."""
    return ReachMap(r, AncestorSet)
