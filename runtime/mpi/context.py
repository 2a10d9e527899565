"""The kernels' ``ctx`` when ranks are MPI processes: peer operations go through the windows.

Kernels are unchanged: ``ctx.peer(name, p)[region] = v`` is a remote_store, ``ctx.atomic_add``
a (remote) atomic, ``ctx.notify`` / ``yield ctx.wait(...)`` the signal operations.  What
differs is only where they land:

* a rank hosted by another process is a :class:`RemoteRank` whose windows are
  :class:`RemoteArray` proxies (assignment = ``MPI_Put``, indexing = ``MPI_Get``);
* a rank hosted by this process is its ordinary :class:`runtime.memory.RankMemory`, whose
  window arrays are this process's part of the MPI windows (plain stores, as in-process);
* notifies and atomics on windows always go through MPI, even between ranks of one process,
  because peers in other processes update the same cells atomically;
* a wait reads its cell through MPI (a spin through plain loads would starve MPI progress).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.memory import BlockContext, Wait

if TYPE_CHECKING:  # pragma: no cover
    from runtime.mpi.windows import Windows


class RemoteArray:
    """Rank ``rank``'s array of window ``name``, hosted by another process."""

    __slots__ = ("_windows", "name", "rank", "shape", "dtype")

    def __init__(
        self, windows: Windows, name: str, rank: int, shape: tuple[int, ...], dtype: np.dtype
    ) -> None:
        self._windows = windows
        self.name = name
        self.rank = rank
        self.shape = shape
        self.dtype = dtype

    def __setitem__(self, index: Any, value: Any) -> None:
        self._windows.put(self.name, self.rank, index, value)

    def __getitem__(self, index: Any) -> np.ndarray:
        return self._windows.get(self.name, self.rank, index)

    def __repr__(self) -> str:
        return f"<RemoteArray {self.name} of rank {self.rank} {self.shape} {self.dtype}>"


class RemoteRank:
    """What this process sees of a rank another process hosts: its windows and signals."""

    __slots__ = ("rank", "nranks", "arrays", "kinds", "scalars")

    def __init__(self, rank: int, nranks: int, windows: Windows, kinds: dict[str, str]) -> None:
        self.rank = rank
        self.nranks = nranks
        self.kinds = kinds
        self.scalars: dict[str, Any] = {}
        self.arrays = {}
        for name in windows.arrays:
            like = windows.template(name)
            self.arrays[name] = RemoteArray(windows, name, rank, like.shape, like.dtype)

    def for_round(self, scalars: dict[str, Any]) -> RemoteRank:
        return self

    def t(self, name: str) -> RemoteArray:
        try:
            return self.arrays[name]
        except KeyError:
            raise KeyError(
                f"rank {self.rank} is hosted by another MPI process; only its windows and signals are reachable, not {name!r}"
            ) from None


class CellReader:
    """``reader[key]`` is the current value of one rank's signal cell, read through MPI."""

    __slots__ = ("_windows", "signal", "rank")

    def __init__(self, windows: Windows, signal: str, rank: int) -> None:
        self._windows = windows
        self.signal = signal
        self.rank = rank

    def __getitem__(self, key: tuple[int, ...]) -> int:
        value = self._windows.read_cell(self.signal, self.rank, key)
        self._windows.sync()  # what peers stored before this notify is visible to local loads
        return value


class MpiBlockContext(BlockContext):
    """``ctx`` of a block on an MPI process (see the module docstring)."""

    __slots__ = ()

    def atomic_add(self, name: str, index: Any, value: Any, peer: int | None = None) -> None:
        if peer is None and self._mem.kinds.get(name) != "window":
            super().atomic_add(name, index, value)  # private to this rank: a plain add
            return
        target = self.rank if peer is None else int(peer)
        self._peer_mem(name, target)  # range and kind checks
        self._engine.windows.atomic_add(name, target, index, value)

    def notify(self, signal: str, index: Any, peer: int, value: int = 1, op: str = "add") -> None:
        _, key = self._notify_target(signal, index, peer, op)
        engine = self._engine
        engine.windows.notify(signal, int(peer), key, int(value), op, engine.now)
        engine.notified(self._blk, int(peer), signal, key)

    def wait(self, signal: str, index: Any, cmp: str = "ge", expected: int = 1) -> Wait:
        key = self._wait_key(signal, index, cmp)
        return Wait(signal, key, cmp, int(expected), self._engine.cell_reader(signal, self.rank))
