"""Per-rank memory and the ``ctx`` object kernels see.

Every rank owns one NumPy array per tensor of the program (GM of one device).  Windows are
symmetric: the same name exists on every rank, and ``ctx.peer(name, p)`` returns rank ``p``'s
array so a ``remote_store`` is a plain slice assignment into it.  Signals are int32 arrays whose
cells only change through ``ctx.notify`` (AtomicAdd or Set on the *peer's* cell, applied the
moment the notifying block executes it) so the engine can wake exactly the blocks spinning on
that cell.

Blocking operations are not calls but values a kernel *yields*: ``yield ctx.wait(...)`` and
``yield ctx.barrier()``.  That keeps kernels ordinary generator functions and lets the engine
decide when a block resumes, while the block keeps holding its core in between (TWAIT and a hard
syncall both spin on the core, docs/runtime-semantics.md §7.2, §8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.program import Program, numpy_dtype

if TYPE_CHECKING:  # pragma: no cover
    from runtime.scheduler import Block, Engine

_I32_MOD = 1 << 32
_I32_HALF = 1 << 31


def cell_key(index: Any) -> tuple[int, ...]:
    """Normalise a signal cell index (int or tuple of ints) to a hashable tuple of ints."""
    if isinstance(index, tuple):
        return tuple(int(i) for i in index)
    return (int(index),)


def format_cell(signal: str, key: tuple[int, ...]) -> str:
    """``data_arrived[1]`` / ``grid[0, 3]`` - how reports and traces name a signal cell."""
    return f"{signal}[{', '.join(str(k) for k in key)}]"


def wrap_i32(v: int) -> int:
    """``v`` wrapped to a signed 32-bit value (signal cells are INT32 counters)."""
    return (v + _I32_HALF) % _I32_MOD - _I32_HALF


class RankMemory:
    """The arrays of one rank plus the runtime scalars of one round (what predicates see)."""

    __slots__ = ("rank", "nranks", "arrays", "kinds", "scalars")

    def __init__(
        self,
        rank: int,
        nranks: int,
        arrays: dict[str, np.ndarray],
        kinds: dict[str, str],
        scalars: dict[str, Any],
    ) -> None:
        self.rank = rank
        self.nranks = nranks
        self.arrays = arrays
        self.kinds = kinds
        self.scalars = scalars

    def for_round(self, scalars: dict[str, Any]) -> RankMemory:
        """Same arrays, different scalars (the epoch changes per round, memory does not)."""
        return RankMemory(self.rank, self.nranks, self.arrays, self.kinds, scalars)

    def t(self, name: str) -> np.ndarray:
        """This rank's array of tensor ``name``."""
        try:
            return self.arrays[name]
        except KeyError:
            raise KeyError(f"no tensor {name!r}; known: {sorted(self.arrays)}") from None

    def scalar(self, name: str) -> Any:
        """Runtime scalar ``name`` of the current round."""
        try:
            return self.scalars[name]
        except KeyError:
            raise KeyError(f"no runtime scalar {name!r}; known: {sorted(self.scalars)}") from None


def build_memory(
    program: Program, inputs: dict[str, np.ndarray] | list[dict[str, np.ndarray]], ranks: int
) -> list[RankMemory]:
    """Allocate every tensor on every rank from ``inputs``, zero-filling the rest.

    Given arrays are copied, except ``input`` tensors of the right dtype, which are shared
    as read-only views (the kernels never write them).

    ``inputs`` is either one dict used for every rank or a list with one dict per rank.
    ``input``/``inout`` tensors must be given; output/scratch/window/signal default to zeros.
    """
    if isinstance(inputs, dict):
        per_rank = [inputs] * ranks
    else:
        per_rank = list(inputs)
        if len(per_rank) != ranks:
            raise ValueError(f"got inputs for {len(per_rank)} ranks, expected {ranks}")
    known = {t.name for t in program.tensors}
    kinds = {t.name: t.kind for t in program.tensors}
    mems = []
    for r, given in enumerate(per_rank):
        unknown = set(given) - known
        if unknown:
            raise ValueError(f"rank {r}: inputs name unknown tensors {sorted(unknown)}")
        arrays: dict[str, np.ndarray] = {}
        for spec in program.tensors:
            dt = numpy_dtype(spec.dtype)
            if spec.name in given:
                src = np.asarray(given[spec.name])
                if src.shape != tuple(spec.shape):
                    raise ValueError(
                        f"rank {r}: input {spec.name!r} has shape {src.shape}, expected {tuple(spec.shape)}"
                    )
                if spec.kind == "input" and src.dtype == dt:
                    # Inputs are read-only on the device: share the caller's data through a
                    # read-only view instead of copying it (a stray write raises).
                    view = src.view()
                    view.flags.writeable = False
                    arrays[spec.name] = view
                else:
                    arrays[spec.name] = np.array(src, dtype=dt, copy=True)
            elif spec.kind in ("input", "inout"):
                raise ValueError(f"rank {r}: missing {spec.kind} tensor {spec.name!r}")
            else:
                arrays[spec.name] = np.zeros(spec.shape, dtype=dt)
        mems.append(RankMemory(r, ranks, arrays, kinds, {}))
    return mems


class Wait:
    """A pending ``wait`` on a local signal cell; kernels create it with ``ctx.wait`` and yield it."""

    __slots__ = ("signal", "key", "cmp", "expected", "arr")

    def __init__(self, signal: str, key: tuple[int, ...], cmp: str, expected: int, arr: np.ndarray) -> None:
        self.signal = signal
        self.key = key
        self.cmp = cmp
        self.expected = expected
        self.arr = arr

    def value(self) -> int:
        return int(self.arr[self.key])

    def satisfied(self) -> bool:
        v = int(self.arr[self.key])
        return v >= self.expected if self.cmp == "ge" else v == self.expected

    def describe(self) -> str:
        op = ">=" if self.cmp == "ge" else "=="
        return f"{format_cell(self.signal, self.key)} current={self.value()} expected{op}{self.expected}"


class Barrier:
    """Marker a kernel yields for a hard syncall across all blocks of its grid."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Barrier()"


#: The one marker value (``runtime.machine.BARRIER`` is the block state it leads to).
BARRIER_MARK = Barrier()


class BlockContext:
    """What a kernel gets: its coordinates, this rank's memory, peers' windows, signal ops."""

    __slots__ = (
        "block",
        "nblocks",
        "rank",
        "nranks",
        "epoch",
        "round",
        "task",
        "_mem",
        "_mems",
        "_engine",
        "_blk",
    )

    def __init__(
        self,
        block: int,
        nblocks: int,
        rank: int,
        nranks: int,
        round_: int,
        task: str,
        mem: RankMemory,
        mems: list[RankMemory],
        engine: Engine,
        blk: Block,
    ) -> None:
        self.block = block
        self.nblocks = nblocks
        self.rank = rank
        self.nranks = nranks
        self.round = round_
        self.epoch = round_ + 1
        self.task = task
        self._mem = mem
        self._mems = mems
        self._engine = engine
        self._blk = blk

    def __repr__(self) -> str:
        return f"<BlockContext {self.task}[{self.block}] rank {self.rank} round {self.round}>"

    def t(self, name: str) -> np.ndarray:
        """This rank's array of tensor, window or signal ``name``."""
        return self._mem.t(name)

    def scalar(self, name: str) -> Any:
        """Runtime scalar ``name`` (``epoch`` is round + 1 when the program lists it)."""
        return self._mem.scalar(name)

    def _peer_mem(self, name: str, peer: int) -> RankMemory:
        if not 0 <= int(peer) < self.nranks:
            raise IndexError(f"{self.task}[{self.block}]: peer rank {peer} out of range 0..{self.nranks - 1}")
        kind = self._mem.kinds.get(name)
        if kind not in ("window", "signal"):
            raise ValueError(
                f"{self.task}[{self.block}]: tensor {name!r} is {kind!r}; only window and signal "
                "tensors are addressable on a peer"
            )
        return self._mems[int(peer)]

    def peer(self, name: str, peer_rank: int) -> np.ndarray:
        """Rank ``peer_rank``'s array of window ``name``; slice-assign into it for a remote_store."""
        return self._peer_mem(name, peer_rank).arrays[name]

    def atomic_add(self, name: str, index: Any, value: Any, peer: int | None = None) -> None:
        """``arr[index] += value`` now, in the destination dtype (FP32 atomics round in FP32).

        Applied at the moment the block executes it, so the result of several blocks adding
        floats into one place depends on the order the scheduler ran them - on purpose.
        """
        mem = self._mem if peer is None else self._peer_mem(name, peer)
        arr = mem.t(name)
        arr[index] += np.asarray(value).astype(arr.dtype, copy=False)

    def _notify_target(self, signal: str, index: Any, peer: int, op: str) -> tuple[Any, tuple[int, ...]]:
        """Check a notify's operands; return the peer's memory and the cell key."""
        if op not in ("add", "set"):
            raise ValueError(f"{self.task}[{self.block}]: notify op must be 'add' or 'set', got {op!r}")
        mem = self._mems[int(peer)] if 0 <= int(peer) < self.nranks else None
        if mem is None:
            raise IndexError(
                f"{self.task}[{self.block}]: notify peer {peer} out of range 0..{self.nranks - 1}"
            )
        if mem.kinds.get(signal) != "signal":
            raise ValueError(f"{self.task}[{self.block}]: notify target {signal!r} is not a signal")
        return mem, cell_key(index)

    def notify(self, signal: str, index: Any, peer: int, value: int = 1, op: str = "add") -> None:
        """AtomicAdd (``op="add"``) or Set (``op="set"``) ``value`` on the peer's int32 cell."""
        mem, key = self._notify_target(signal, index, peer, op)
        arr = mem.arrays[signal]
        old = int(arr[key])
        arr[key] = wrap_i32(old + int(value) if op == "add" else int(value))
        self._engine.notified(self._blk, int(peer), signal, key)

    def _wait_key(self, signal: str, index: Any, cmp: str) -> tuple[int, ...]:
        """Check a wait's operands; return the cell key."""
        if cmp not in ("ge", "eq"):
            raise ValueError(f"{self.task}[{self.block}]: wait cmp must be 'ge' or 'eq', got {cmp!r}")
        if self._mem.kinds.get(signal) != "signal":
            raise ValueError(f"{self.task}[{self.block}]: wait target {signal!r} is not a signal")
        key = cell_key(index)
        shape = self._mem.arrays[signal].shape
        if len(key) != len(shape) or not all(0 <= k < n for k, n in zip(key, shape, strict=False)):
            # checked here, in the kernel: the cell is read when the wait is yielded, outside it
            raise IndexError(f"wait on {format_cell(signal, key)}, outside {signal}'s shape {tuple(shape)}")
        return key

    def wait(self, signal: str, index: Any, cmp: str = "ge", expected: int = 1) -> Wait:
        """A wait on this rank's cell ``signal[index]``; ``yield`` it to block until it holds."""
        key = self._wait_key(signal, index, cmp)
        return Wait(signal, key, cmp, int(expected), self._mem.arrays[signal])

    def barrier(self) -> Barrier:
        """A hard syncall over every block of this grid; ``yield`` it."""
        return BARRIER_MARK
