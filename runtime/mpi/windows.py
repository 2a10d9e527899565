"""The program's windows and signal cells as MPI-3 RMA windows, and the operations on them.

One ``MPI.Win.Allocate`` window per ``window`` or ``signal`` tensor, allocated once, up front,
from the program's declarations; each process's part holds the arrays of the ranks it hosts,
back to back, and those arrays *are* the ranks' tensors (kernels read and write them through
``ctx.t`` as in the in-process simulator).  Every signal has a second window of int64
*clocks*: a notify raises the cell's clock to the notifier's simulated time (MPI MAX) before
it changes the cell, so a waiter woken by it resumes no earlier than the notify happened and
the merged trace stays causal.

A ``remote_store`` is an ``MPI_Accumulate(REPLACE)``, not an ``MPI_Put``: accumulates from one
origin to one location are ordered (MPI's default accumulate ordering), so two stores to the
same row land in program order as in-process, without a flush after each.  Stores are
completed (flushed) before this process's next notify or remote read and at the end of the
block step that issued them - a flush per row cost 3x the store itself.  Notifies and atomics
are completed before they return.  So a ``remote_store`` followed by a ``notify`` is visible
to the waiter that sees the notify, and nothing is in flight when a process is passive.  All
windows stay in one passive ``lock_all`` epoch for the whole run.

A region of a tensor (any basic NumPy index: ints, slices with steps, ``...``) is sent as one
derived datatype built from the view's offset, shape and strides; an advanced (fancy) index
falls back to a list of element offsets.

Atomic adds: MPI's SUM is the simulator's add for fp32, fp64 and the integer types (the same
IEEE single or double rounding, two's-complement wrap), and LOR is NumPy's bool add.  There is
no MPI sum for fp16, nor for bf16 (stored as fp32 by the simulator, but a bf16 atomic is not an
fp32 atomic on the device): those go through a compare-and-swap loop per element that
computes the new value with exactly the NumPy operation the in-process simulator applies.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from runtime.memory import wrap_i32
from runtime.mpi.layout import RankLayout
from runtime.program import Program, numpy_dtype
from runtime.watchdog import uninterrupted

#: Tensor dtypes without an MPI reduction equal to the simulator's add.
CAS_DTYPES = ("float16", "bfloat16")


_MADV_DONTNEED, _MADV_REMOVE = 4, 9  # Linux <sys/mman.h>


def zero_lazily(raw: np.ndarray) -> None:
    """Zero ``raw`` without making its pages resident where the kernel allows it.

    MPI memory comes uninitialised.  Writing zeros would allocate every page, and the
    receive windows of a real MoE layer (128 MiB per rank at D = 4096) are mostly never
    touched; in-process they are lazily zeroed NumPy arrays.  So the whole pages inside the
    buffer are given back to the kernel: ``MADV_REMOVE`` punches them out of a shared-memory
    segment (reads then see zeros), else ``MADV_DONTNEED`` drops private anonymous pages (the
    same), checked by reading them back (anonymous zero pages cost no memory); whatever is
    left, or all of it where madvise is not available, is written with zeros.
    """
    import ctypes
    import mmap

    n = raw.size
    if n == 0:
        return
    page = mmap.PAGESIZE
    addr = raw.__array_interface__["data"][0]
    lo = -addr % page
    hi = lo + (n - lo) // page * page if n > lo else lo
    if hi - lo < page:
        raw[:] = 0
        return
    raw[:lo] = 0
    raw[hi:] = 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    except (OSError, AttributeError):
        raw[lo:hi] = 0
        return
    if madvise(addr + lo, hi - lo, _MADV_REMOVE) == 0:
        return
    if madvise(addr + lo, hi - lo, _MADV_DONTNEED) == 0 and not raw[lo:hi].any():
        return
    raw[lo:hi] = 0


def basic_region(
    idx: tuple, shape: tuple[int, ...], strides: tuple[int, ...]
) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(byte offset, shape, strides) of a basic index of ints and slices, as NumPy computes
    them for the view (without making one); None for any other kind of index."""
    off, out_shape, out_strides = 0, [], []
    for axis, i in enumerate(idx):
        n, stride = shape[axis], strides[axis]
        if type(i) is slice:
            start, stop, step = i.indices(n)
            length = len(range(start, stop, step))
            if length:
                off += start * stride
            out_shape.append(length)
            out_strides.append(step * stride)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            k = int(i)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            off += (k % n) * stride
        else:
            return None
    rest = len(idx)
    return off, (*out_shape, *shape[rest:]), (*out_strides, *strides[rest:])


class Windows:
    """The RMA windows of one run on one process (collective to create and to free)."""

    def __init__(self, MPI: Any, comm: Any, program: Program, layout: RankLayout) -> None:
        self.MPI = MPI
        self.comm = comm
        self.layout = layout
        self.me = comm.Get_rank()
        self.hosted = layout.ranks_of(self.me)
        self._int_types = {1: MPI.UINT8_T, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}
        self._sum_types = {
            "float32": MPI.FLOAT,
            "float64": MPI.DOUBLE,
            "int8": MPI.INT8_T,
            "int16": MPI.INT16_T,
            "int32": MPI.INT32_T,
            "int64": MPI.INT64_T,
            "uint8": MPI.UINT8_T,
            "bool": MPI.C_BOOL,
        }
        self.specs = {t.name: t for t in program.tensors if t.kind in ("window", "signal")}
        # One element type per tensor for stores and atomics alike (MPI's accumulate atomicity
        # holds between operations on the same predefined type).
        self._elem = {
            name: self._sum_types.get(spec.dtype) if spec.dtype not in CAS_DTYPES else None
            for name, spec in self.specs.items()
        }
        self.unflushed: set[tuple[str, int]] = set()  # (tensor, process) with stores in flight
        self._in_flight: list[np.ndarray] = []  # their origin buffers, kept until the flush
        self.wins: dict[str, Any] = {}
        self.clocks: dict[str, Any] = {}
        self.nbytes: dict[str, int] = {}
        self.arrays: dict[str, dict[int, np.ndarray]] = {}
        self._types: dict[tuple, tuple[int, Any]] = {}
        self._derived: list[Any] = []  # committed datatypes, freed with the windows
        self._cells: dict[tuple[str, int, tuple[int, ...]], tuple[int, int]] = {}
        self._places: dict[tuple[str, int], tuple[int, int]] = {}
        self._template: dict[str, np.ndarray] = {}  # one hosted rank's array: the shape of every rank's
        #: kind -> [operations, bytes, seconds] issued by this process: put, get, atomic (one
        #: accumulate, or one CAS loop per element), notify, read (a wait polling its cell)
        self.stats: dict[str, list[float]] = {
            k: [0, 0, 0.0] for k in ("put", "get", "atomic", "notify", "read")
        }
        self._nothing32, self._cell32 = np.zeros(1, np.int32), np.zeros(1, np.int32)
        self._nothing64, self._cell64 = np.zeros(1, np.int64), np.zeros(1, np.int64)
        for spec in program.tensors:  # declaration order: the same on every process
            if spec.name in self.specs:
                self._allocate(spec.name, numpy_dtype(spec.dtype), tuple(spec.shape))
                if spec.kind == "signal":
                    self.clocks[spec.name] = self._window(int(np.prod(spec.shape)) * 8)[0]

    # ------------------------------------------------------------------ allocation

    def _window(self, per_rank: int) -> tuple[Any, np.ndarray]:
        MPI = self.MPI
        total = per_rank * len(self.hosted)
        win = MPI.Win.Allocate(max(total, 1), 1, comm=self.comm)
        raw = np.frombuffer(win.tomemory(), dtype=np.uint8)[:total]
        zero_lazily(raw)
        win.Lock_all(MPI.MODE_NOCHECK)
        return win, raw

    def _allocate(self, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        per = int(np.prod(shape)) * dtype.itemsize
        win, raw = self._window(per)
        self.wins[name] = win
        self.nbytes[name] = per
        self._elem[name] = self._elem[name] or self._int_types[dtype.itemsize]
        self.arrays[name] = {
            r: raw[i * per : (i + 1) * per].view(dtype).reshape(shape) for i, r in enumerate(self.hosted)
        }
        self._template[name] = self.arrays[name][self.hosted.start]

    def publish_initial(self) -> None:
        """Make the hosted ranks' initial contents visible to every peer (collective)."""
        for win in (*self.wins.values(), *self.clocks.values()):
            win.Sync()
        self.comm.Barrier()

    def free(self) -> None:
        """End the epoch and free every window and datatype (collective)."""
        for win in (*self.wins.values(), *self.clocks.values()):
            win.Unlock_all()
            win.Free()
        for dt in self._derived:
            dt.Free()
        self.wins, self.clocks, self._types, self._derived = {}, {}, {}, []

    def sync(self) -> None:
        """Local loads after an observed notify see what peers stored before it (MPI_Win_sync)."""
        for win in self.wins.values():
            win.Sync()

    # ------------------------------------------------------------------ addressing

    def _region(self, name: str, index: Any) -> tuple[int, tuple[int, ...], tuple[int, ...] | np.ndarray]:
        """(byte offset, shape, strides) of ``arr[index]`` in one rank's array, or for an
        advanced index (0, shape, element byte offsets)."""
        template = self._template[name]
        idx = index if isinstance(index, tuple) else (index,)
        if len(idx) <= template.ndim:
            region = basic_region(idx, template.shape, template.strides)
            if region is not None:
                return region
        if not any(i is Ellipsis for i in idx):
            idx = (*idx, Ellipsis)  # integer indices give a 0-d view, not a copy
        view = template[idx]
        if view.flags.owndata:  # advanced indexing copied: address the elements one by one
            flat = np.arange(template.size, dtype=np.int64).reshape(template.shape)[index]
            return 0, flat.shape, flat.ravel() * template.itemsize
        return view.ctypes.data - template.ctypes.data, view.shape, view.strides

    def _datatype(self, name: str, shape: tuple[int, ...], layout: Any) -> tuple[int, Any]:
        """(count, datatype) describing a region of elements of ``name``'s element type."""
        base = self._elem[name]
        if isinstance(layout, np.ndarray):
            dt = base.Create_hindexed_block(1, [int(x) for x in layout])
            dt.Commit()
            self._derived.append(dt)
            return 1, dt
        key = (name, shape, layout)
        hit = self._types.get(key)
        if hit is not None:
            return hit
        itemsize = self._template[name].itemsize
        dims = [(n, s) for n, s in zip(shape, layout, strict=True) if n != 1]
        count = int(np.prod(shape))
        expected = itemsize
        contiguous = True
        for n, s in reversed(dims):
            contiguous = contiguous and s == expected
            expected *= n
        if contiguous:
            out = (count, base)
        else:
            dt, made = base, []
            if dims and dims[-1][1] == itemsize:
                dt = dt.Create_contiguous(dims[-1][0])
                made.append(dt)
                dims = dims[:-1]
            for n, s in reversed(dims):
                dt = dt.Create_hvector(n, 1, s)
                made.append(dt)
            dt.Commit()
            for t in made[:-1]:
                t.Free()
            self._derived.append(dt)
            out = (1, dt)
        self._types[key] = out
        return out

    def _target(self, name: str, rank: int, index: Any) -> tuple[int, int, int, Any, tuple]:
        """(process, byte displacement, count, datatype, shape) of ``rank``'s ``name[index]``."""
        off, shape, layout = self._region(name, index)
        count, dt = self._datatype(name, shape, layout)
        proc, start = self._place(name, rank)
        return proc, start + off, count, dt, shape

    def _place(self, name: str, rank: int) -> tuple[int, int]:
        """(process, byte displacement) of ``rank``'s array of ``name``."""
        hit = self._places.get((name, rank))
        if hit is None:
            hit = (self.layout.owner(rank), self.layout.slot(rank) * self.nbytes[name])
            self._places[(name, rank)] = hit
        return hit

    def template(self, name: str) -> np.ndarray:
        """One hosted rank's array of ``name``: the shape and dtype of every rank's."""
        return self._template[name]

    def _dtype(self, name: str) -> np.dtype:
        return self._template[name].dtype

    # ------------------------------------------------------------------ data

    def _count(self, kind: str, nbytes: int, since: float) -> None:
        entry = self.stats[kind]
        entry[0] += 1
        entry[1] += nbytes
        entry[2] += time.perf_counter() - since

    @uninterrupted
    def put(self, name: str, rank: int, index: Any, value: Any) -> None:
        """``rank``'s ``name[index] = value`` (NumPy assignment casting), completed by :meth:`complete`."""
        t0 = time.perf_counter()
        base = self._elem[name]
        proc, disp, count, dt, shape = self._target(name, rank, index)
        origin = np.empty(shape, self._dtype(name))
        origin[...] = value
        if origin.size:
            win = self.wins[name]
            win.Accumulate([origin, origin.size, base], proc, (disp, count, dt), self.MPI.REPLACE)
            self.unflushed.add((name, proc))
            self._in_flight.append(origin)
        self._count("put", origin.nbytes, t0)

    @uninterrupted
    def complete(self) -> None:
        """Complete every store in flight at its target."""
        t0 = time.perf_counter()
        for name, proc in self.unflushed:
            self.wins[name].Flush(proc)
        self.unflushed.clear()
        self._in_flight.clear()
        self.stats["put"][2] += time.perf_counter() - t0

    @uninterrupted
    def get(self, name: str, rank: int, index: Any) -> np.ndarray:
        """A copy of ``rank``'s ``name[index]`` (after this process's stores in flight)."""
        if self.unflushed:
            self.complete()
        t0 = time.perf_counter()
        base = self._elem[name]
        proc, disp, count, dt, shape = self._target(name, rank, index)
        out = np.empty(shape, self._dtype(name))
        if out.size:
            win = self.wins[name]
            win.Get([out, out.size, base], proc, (disp, count, dt))
            win.Flush(proc)
        self._count("get", out.nbytes, t0)
        return out

    @uninterrupted
    def atomic_add(self, name: str, rank: int, index: Any, value: Any) -> None:
        """``rank``'s ``name[index] += value`` as one atomic per element, in the tensor's dtype."""
        t0 = time.perf_counter()
        dtype = self._dtype(name)
        kind = self.specs[name].dtype
        operand = np.asarray(value).astype(dtype, copy=False)
        if kind in CAS_DTYPES:
            self._count("atomic", self._cas_add(name, rank, index, operand), t0)
            return
        base = self._elem[name]
        proc, disp, count, dt, shape = self._target(name, rank, index)
        origin = np.ascontiguousarray(np.broadcast_to(operand, shape))
        if origin.size:
            op = self.MPI.LOR if kind == "bool" else self.MPI.SUM
            win = self.wins[name]
            win.Accumulate([origin, origin.size, base], proc, (disp, count, dt), op)
            win.Flush(proc)
        self._count("atomic", origin.nbytes, t0)

    def _cas_add(self, name: str, rank: int, index: Any, operand: np.ndarray) -> int:
        """Compare-and-swap loop per element: read, add in NumPy as in-process, swap if unchanged;
        the bytes updated."""
        dtype = operand.dtype
        bits = np.dtype(f"u{dtype.itemsize}")
        off, shape, layout = self._region(name, index)
        if isinstance(layout, np.ndarray):
            offsets = layout
        else:
            grids = np.ix_(*[np.arange(n, dtype=np.int64) * s for n, s in zip(shape, layout, strict=True)])
            offsets = (off + sum(grids, np.zeros((), np.int64))).ravel()
        values = np.broadcast_to(operand, shape).ravel()
        proc, start = self._place(name, rank)
        win = self.wins[name]
        nothing, old, seen, new = (np.zeros(1, bits) for _ in range(4))
        for off_i, v in zip(offsets.tolist(), values, strict=True):
            disp = start + off_i
            win.Fetch_and_op(nothing, old, proc, disp, self.MPI.NO_OP)
            win.Flush(proc)
            while True:
                new[...] = (old.view(dtype) + v).astype(dtype).view(bits)
                win.Compare_and_swap(new, old, seen, proc, disp)
                win.Flush(proc)
                if seen[0] == old[0]:
                    break
                old[...] = seen
        return values.size * dtype.itemsize

    # ------------------------------------------------------------------ signals

    def _cell(self, signal: str, rank: int, key: tuple[int, ...]) -> tuple[int, int]:
        """(process, element displacement) of ``rank``'s cell ``signal[key]`` (int32 units)."""
        hit = self._cells.get((signal, rank, key))
        if hit is None:
            shape = tuple(self.specs[signal].shape)
            flat = int(np.ravel_multi_index(key, shape))
            proc, start = self._place(signal, rank)
            hit = (proc, start // 4 + flat)
            self._cells[(signal, rank, key)] = hit
        return hit

    @uninterrupted
    def notify(self, signal: str, rank: int, key: tuple[int, ...], value: int, op: str, clock: int) -> None:
        """AtomicAdd or Set ``value`` on ``rank``'s int32 cell, after raising its clock to ``clock``
        (and after this process's stores in flight, which the notify publishes)."""
        if self.unflushed:
            self.complete()
        t0 = time.perf_counter()
        MPI = self.MPI
        proc, cell = self._cell(signal, rank, key)
        stamp = np.array([clock], np.int64)
        cw = self.clocks[signal]
        cw.Accumulate([stamp, 1, MPI.INT64_T], proc, (cell * 8, 1, MPI.INT64_T), MPI.MAX)
        cw.Flush(proc)
        operand = np.array([wrap_i32(int(value))], np.int32)
        win = self.wins[signal]
        win.Accumulate(
            [operand, 1, MPI.INT32_T],
            proc,
            (cell * 4, 1, MPI.INT32_T),
            MPI.SUM if op == "add" else MPI.REPLACE,
        )
        win.Flush(proc)
        self._count("notify", 12, t0)

    @uninterrupted
    def read_cell(self, signal: str, rank: int, key: tuple[int, ...]) -> int:
        """The current value of ``rank``'s cell ``signal[key]``, read atomically."""
        t0 = time.perf_counter()
        proc, cell = self._cell(signal, rank, key)
        win = self.wins[signal]
        out = self._cell32
        win.Fetch_and_op(self._nothing32, out, proc, cell * 4, self.MPI.NO_OP)
        win.Flush(proc)
        self._count("read", 4, t0)
        return int(out[0])

    @uninterrupted
    def read_clock(self, signal: str, rank: int, key: tuple[int, ...]) -> int:
        """The simulated time of the latest notify of ``rank``'s cell ``signal[key]``."""
        proc, cell = self._cell(signal, rank, key)
        win = self.clocks[signal]
        out = self._cell64
        win.Fetch_and_op(self._nothing64, out, proc, cell * 8, self.MPI.NO_OP)
        win.Flush(proc)
        return int(out[0])
