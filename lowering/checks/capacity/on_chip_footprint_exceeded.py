"""C403: a task's on-chip buffers exceed the core's memory.

## What it catches

The on-chip footprint of a task at its peak: every tile it holds at once, times the dtype
size, times the buffer copies of the enclosing ``pipeline(..., stages=N)`` loops (nested
pipelines multiply: two ``stages=2`` loops keep 4 copies), per memory, compared with the
capacity of that memory on the device (docs/runtime-semantics.md §21.4, rule R20:
``211fed5a`` #621, two nested ``pl.pipeline(stage=2)`` overflowed Mat with 786432 > 524288
bytes).

Tiles are placed as the cube and vector units need them: matmul operands in **Mat** (L1),
accumulators (matmul results and the first operand of ``matmul_acc``) in **Acc** (L0C),
everything else in **Vec** (UB). A tile lives from its ``let`` to the last statement of
its block that uses it (reads, reassigns or stores into it), as the PyPTO ``MemoryReuse``
pass gives a dead tile's bytes to the next one (docs/runtime-semantics.md §12.1); a tile used
before its ``let`` in the block (carried round a loop) or anywhere outside the block lives to the
block's end. Operands loaded inside an expression live for the statement; a plain
tensor-to-tensor copy is a DMA and holds no tile. The peak is taken over the statements of
each block. Sizes are bounded at every admissible parameter value.

Capacities per AI core (a2a3, Ascend 910B), in bytes:

| memory | bytes | source |
|---|---|---|
| Vec (UB, AIV) | 196608 (192 KiB) | the task brief for this rule |
| Mat (L1, AIC) | 524288 (512 KiB) | docs/runtime-semantics.md §21.4: 786432 > 524288 bytes of Mat
(#621) |
| Acc (L0C, AIC) | 131072 (128 KiB) | public Ascend 910B core specs |

L0A/L0B (64 KiB each) are not checked: the compiler splits matmul operands into them. These
sources give no numbers for A5; the same table is used for every preset.

## Why it breaks on the device

Buffers are allocated statically per kernel. A footprint past the capacity fails at
compile time on the real toolchain at best ("on-chip memory overflowed"); with hand-placed
buffers it silently aliases two tiles, and the kernel computes garbage. Pipeline stages are
the trap: each stage is a full copy of the loop body's tiles, and nesting multiplies them.

## Example

    for nb in pipeline(N / 128, stages = 2) {
      for kb in pipeline(K / 512, stages = 2) {           # 4 copies of at and bt
        let at = a[:, kb * 512 : kb * 512 + 512]           # 64 KiB bf16
        let bt = b[kb * 512 : kb * 512 + 512, nb * 128 : nb * 128 + 128]   # 128 KiB
        acc = matmul_acc(acc, at, bt)
      }
    }

## Use instead

    for nb in range(N / 128) {                             # double-buffer only the inner loop
      for kb in pipeline(K / 512, stages = 2) { ... }      # 2 x 192 KiB = 384 KiB of Mat
    }

## Parameter and round coverage

Parameters: every admissible point of each structure class, thinned to the extremes and a
spread beyond 256 points.
Rounds: not round-dependent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lowering import body as ir_body
from lowering.checks.extents import point_text, points_text
from lowering.checks.request_space_cache import scalar_intervals
from lowering.checks.rule import CheckContext, finding
from lowering.ir import DTYPE_BYTES, Graph, Task
from lowering.source import Diagnostic, Span
from lowering.symbolic import EvalError, bounds

CODE = "C403"
NAME = "on_chip_footprint_exceeded"
FAMILY = "capacity"
SEVERITY = "error"
SUMMARY = "a task's on-chip tiles (times pipeline stages) exceed the core's UB/L1/L0C"
POINTS = "all"  # visits every admissible parameter point of the structure class itself

CAPACITY = {"Vec": 196608, "Mat": 524288, "Acc": 131072}
MEMORY = {"Vec": "UB", "Mat": "L1", "Acc": "L0C"}
_CUBE = ("matmul", "matmul_acc")
MAX_POINTS = 256  # parameter points (extremes plus a spread when the domains are larger)


@dataclass(frozen=True)
class Buffer:
    name: str
    tile: str  # ``bf16[512, 128]`` at this parameter point
    copies: int
    pipelines: tuple[Span, ...]
    bytes: int


def _uses(stmts) -> tuple[set[str], set[str]]:
    """Locals used as matmul operands (Mat) and as accumulators (Acc)."""
    mat: set[str] = set()
    acc: set[str] = set()
    for s in ir_body.nested_stmts(stmts):
        if (
            isinstance(s, ir_body.LetS | ir_body.AssignS)
            and isinstance(s.value, ir_body.CallV)
            and s.value.op in _CUBE
        ):
            acc.add(s.name)
        for v in (w for top in ir_body.stmt_values(s) for w in ir_body.nested_values(top)):
            if isinstance(v, ir_body.CallV) and v.op in _CUBE:
                first = 1 if v.op == "matmul_acc" else 0
                if v.op == "matmul_acc" and isinstance(v.args[0], ir_body.LocalV):
                    acc.add(v.args[0].name)
                mat.update(a.name for a in v.args[first : first + 2] if isinstance(a, ir_body.LocalV))
    return mat, acc - mat


def _declared(v: ir_body.Value) -> ir_body.Value:
    """The value under ``valid(x, ...)`` wrappers: a valid extent (``set_validshape``, a slice's
    ``valid_shape=``) is metadata of the tile, not another tile -- a let of ``valid(load)`` is
    the loaded tile itself, in the space its uses give it."""
    while isinstance(v, ir_body.CallV) and v.op == "valid" and v.args:
        v = v.args[0]
    return v


def _touched(s: ir_body.Stmt) -> frozenset[str]:
    """The locals a statement (and everything nested in it) reads, binds, assigns or stores into."""
    names = ir_body.read_names((s,), symbols=False)  # tiles are never named in integer expressions
    for inner in ir_body.nested_stmts((s,)):
        if isinstance(inner, ir_body.LetS | ir_body.AssignS):
            names.add(inner.name)
        elif isinstance(inner, ir_body.StoreS):
            names.add(inner.tensor)
    return frozenset(names)


class _Footprint:
    def __init__(self, task: Task, env: dict, uses: tuple[set[str], set[str]] | None = None):
        self.env = env
        self.mat, self.acc = uses if uses is not None else _uses(task.body)
        self._touched: dict[int, frozenset[str]] = {}

    def touched(self, s: ir_body.Stmt) -> frozenset[str]:
        found = self._touched.get(id(s))
        if found is None:
            found = self._touched[id(s)] = _touched(s)
        return found

    def last_uses(self, stmts, outside: frozenset[str]) -> dict[int, int]:
        """Index of a ``let`` -> index of the last statement of the block that uses the tile,
        for tiles used nowhere but after their ``let`` in this block (the others stay)."""
        out: dict[int, int] = {}
        seen: set[str] = set(outside)
        for j, s in enumerate(stmts):
            if isinstance(s, ir_body.LetS) and s.name not in seen:
                later = [i for i in range(j + 1, len(stmts)) if s.name in self.touched(stmts[i])]
                out[j] = later[-1] if later else j
            seen |= self.touched(s)
        return out

    def inner_outside(self, stmts, i: int, outside: frozenset[str]) -> frozenset[str]:
        """What the blocks nested in statement ``i`` see used outside them: the rest of this
        block and what lies outside it (a loop body also sees the loop's other iterations,
        which are the body itself)."""
        rest = [self.touched(t) for k, t in enumerate(stmts) if k != i]
        return outside.union(*rest)

    def measure(self, t) -> tuple[int, str] | None:
        """(bytes, ``dtype[d0, d1]``) of a tile type at the upper bounds of its extents."""
        if not isinstance(t, ir_body.TileType):
            return None
        n = DTYPE_BYTES.get(t.dtype, 4)
        dims = []
        for d in t.shape:
            try:
                dim = int(bounds(d, self.env)[1])
            except EvalError:
                return None
            n *= dim
            dims.append(str(dim))
        return n, f"{t.dtype}[{', '.join(dims)}]"

    def space_of(self, name: str) -> str:
        return "Mat" if name in self.mat else "Acc" if name in self.acc else "Vec"

    def temporaries(self, v, out: list, copies: int, pipes, operand: bool = False) -> None:
        """Tensor regions loaded inside an expression (each a tile for the statement)."""
        if isinstance(v, ir_body.LoadV) and not v.local:
            m = self.measure(v.type)
            if m is not None:
                space = "Mat" if operand else "Vec"
                out.append((space, Buffer(f"{v.tensor}[...]", m[1], copies, pipes, m[0] * copies)))
        elif isinstance(v, ir_body.CallV):
            first = 1 if v.op == "matmul_acc" else 0
            for i, a in enumerate(v.args):
                if v.op == "gather_rows" and i == 0:
                    continue  # pl.gather_row reads the indexed rows from GM: only its result is a tile
                self.temporaries(a, out, copies, pipes, v.op in _CUBE and first <= i < first + 2)
        elif isinstance(v, ir_body.BinV):
            self.temporaries(v.a, out, copies, pipes)
            self.temporaries(v.b, out, copies, pipes)

    def block(
        self, stmts, copies: int, pipes: tuple[Span, ...], outside: frozenset[str] = frozenset()
    ) -> tuple[dict, dict]:
        """(peak bytes per memory, the buffers behind each peak). ``let`` tiles stay until
        their last use in the block (``last_uses``; ``outside``: the locals used outside the
        block); a statement's loaded operands and results only during it."""
        spaces = ("Vec", "Mat", "Acc")
        own: dict[str, int] = dict.fromkeys(spaces, 0)
        items: dict[str, list] = {k: [] for k in spaces}
        peak: dict[str, int] = dict.fromkeys(spaces, 0)
        peak_items: dict[str, list] = {k: [] for k in spaces}

        def at(extra: dict, extra_items: dict) -> None:
            for k in spaces:
                if own[k] + extra[k] > peak[k]:
                    peak[k], peak_items[k] = own[k] + extra[k], items[k] + extra_items[k]

        last = self.last_uses(stmts, outside)
        ends: dict[int, list[tuple[str, Buffer]]] = {}
        for i, s in enumerate(stmts):
            temps: list = []
            if isinstance(s, ir_body.LetS):
                m = self.measure(s.value.type)
                if m is not None:
                    space = self.space_of(s.name)
                    buf = Buffer(s.name, m[1], copies, pipes, m[0] * copies)
                    own[space] += buf.bytes
                    items[space] = [*items[space], buf]
                    if i in last:
                        ends.setdefault(last[i], []).append((space, buf))
                if not isinstance(_declared(s.value), ir_body.LoadV):
                    self.temporaries(s.value, temps, copies, pipes)
            elif isinstance(s, ir_body.AssignS | ir_body.EvalS):
                if not isinstance(s.value, ir_body.LoadV):
                    self.temporaries(s.value, temps, copies, pipes)
            elif isinstance(s, ir_body.StoreS | ir_body.RemoteStoreS):
                if isinstance(s.value, ir_body.LoadV) and not s.value.local:
                    continue  # tensor-to-tensor copy: a DMA, no tile
                if isinstance(s.value, ir_body.CallV | ir_body.BinV):
                    m = self.measure(s.value.type)
                    if m is not None:
                        space = "Acc" if isinstance(s.value, ir_body.CallV) and s.value.op in _CUBE else "Vec"
                        temps.append((space, Buffer("(stored value)", m[1], copies, pipes, m[0] * copies)))
                self.temporaries(s.value, temps, copies, pipes)
            elif isinstance(s, ir_body.ForS):
                inner = copies * (s.stages if s.kind == "pipeline" else 1)
                inner_pipes = pipes + ((s.span,) if s.kind == "pipeline" and s.stages > 1 else ())
                saved = self.env.get(s.var)
                try:
                    lo, _ = bounds(s.start, self.env)
                    _, hi = bounds(s.stop, self.env)
                    self.env[s.var] = (lo, max(hi - 1, lo))
                except EvalError:
                    self.env[s.var] = (0, 0)
                at(*self.block(s.body, inner, inner_pipes, self.inner_outside(stmts, i, outside)))
                if saved is None:
                    self.env.pop(s.var, None)
                else:
                    self.env[s.var] = saved
            elif isinstance(s, ir_body.IfS):
                around = self.inner_outside(stmts, i, outside)
                at(*self.block(s.then, copies, pipes, around))
                at(*self.block(s.orelse, copies, pipes, around))
            extra = dict.fromkeys(spaces, 0)
            extra_items: dict[str, list] = {k: [] for k in spaces}
            for space, buf in temps:
                extra[space] += buf.bytes
                extra_items[space].append(buf)
            at(extra, extra_items)
            for space, buf in ends.get(i, ()):  # dead from here on: MemoryReuse hands its bytes on
                own[space] -= buf.bytes
                items[space] = [b for b in items[space] if b is not buf]
        return peak, peak_items


class _Recording(dict):
    """An environment that remembers which names were looked up in it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self.read.add(key)
        return dict.get(self, key, default)

    def __contains__(self, key) -> bool:
        self.read.add(key)
        return dict.__contains__(self, key)


_ABSENT = object()


def _footprint(task: Task, env: dict, uses, memo: dict) -> tuple[dict, dict]:
    """``_Footprint(task, env).block(task.body)``, reused from an earlier parameter point when
    every name the computation looked up there has the same value here (then it runs
    identically). ``memo``: per task, the names one run looked up -> their values -> result."""
    runs = memo.setdefault(task.name, {})
    for names, results in runs.items():
        found = results.get(tuple(env.get(n, _ABSENT) for n in names))
        if found is not None:
            return found
    recording = _Recording(env)
    result = _Footprint(task, recording, uses).block(task.body, 1, ())
    names = tuple(sorted(recording.read))
    runs.setdefault(names, {})[tuple(env.get(n, _ABSENT) for n in names)] = result
    return result


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    fails: dict[tuple[str, str], list] = {}
    uses: dict[str, tuple[set[str], set[str]]] = {}  # per task, the same at every point
    memo: dict[str, dict[tuple, dict[tuple, tuple[dict, dict]]]] = {}
    for point in graph.admissible_points(limit=MAX_POINTS):
        scalars = scalar_intervals(ctx, point)
        for task in graph.tasks:
            try:
                blocks = int(bounds(task.grid, point)[1])
                nranks = int(bounds(graph.ranks, point)[1])
            except EvalError:
                continue
            env = {**point, **scalars, "block": (0, max(blocks - 1, 0)), "rank": (0, max(nranks - 1, 0))}
            env["nranks"] = nranks
            if task.name not in uses:
                uses[task.name] = _uses(task.body)
            peak, items = _footprint(task, env, uses[task.name], memo)
            for space, total in peak.items():
                if total > CAPACITY[space]:
                    fails.setdefault((task.name, space), []).append((point, total, items[space], task))
    for (_, space), found in fails.items():
        point, total, buffers, task = found[0]
        ranged = any(p.domain is not None for p in graph.params.values())
        at = f" (at {point_text(graph, point)}; too large for {points_text(graph, [p for p, *_ in found])})"
        top = sorted(buffers, key=lambda b: -b.bytes)[:4]
        parts = []
        for b in top:
            times = f" x {b.copies} pipeline copies" if b.copies > 1 else ""
            parts.append(f"{b.name} {b.tile}{times} = {b.bytes} B")
        pipes = {s for b in buffers for s in b.pipelines}
        nested = max((b.copies for b in buffers), default=1)
        why = f"; nested pipeline stages multiply to {nested} copies" if nested > 2 else ""
        yield finding(
            CODE,
            SEVERITY,
            task.header_span,
            f"{task.name}: on-chip {space} ({MEMORY[space]}) footprint is {total} B, over the "
            f"{CAPACITY[space]} B of an a2a3 core{at if ranged else ''}: {', '.join(parts)}{why}",
            fix="shrink the tiles, or lower the pipeline stages (a plain range loop keeps one copy)",
            related=tuple((s, "pipeline") for s in sorted(pipes)),
        )
