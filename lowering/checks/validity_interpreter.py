"""The abstract interpreter of the validity analysis: one task body at one parameter point.

It follows tile values through the statements of a body and records, per task, its stores'
valid extents and its sort events (``validity_facts``); what the analysis tracks, and why,
is described in ``validity``, which runs it over a graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from lowering import body as ir_body
from lowering.checks.bodies import is_neg_inf, ops_called
from lowering.checks.extents import named_value, narrow
from lowering.checks.validity_facts import Abs, Chain, SortEvent, StoreFact, TaskFacts
from lowering.ir import Condition, Graph, Loop, Task
from lowering.source import Span
from lowering.symbolic import Const, EvalError, Expr, binop, bounds, free_symbols

MAX_REPEATS = 255  # mrgsort repeats per instruction (pto-isa TMrgSort)
MAX_UNROLL = 16  # iterations of a body loop that merges a sorted row, followed one by one
_WIDE = 1 << 62  # the range of an integer read from data


@dataclass
class TensorFinite:
    """What the tasks interpreted so far stored into one tensor: where its finite columns end."""

    end: int  # finite columns end at this column (upper bound over producers); -1: unknown
    origin: tuple[Expr, ...]


def _python_ints(env: dict, conds: list[Condition]) -> dict:
    """``env`` after ``narrow(env, conds)``, its narrowed intervals as Python ints (narrowing
    computes them with NumPy, whose int64 would wrap on the wide ranges of values read from
    data). Only names of the conditions are narrowed, and every other interval is already
    made of Python ints, so only those are converted (a point holds hundreds of constants)."""
    for c in conds:
        for sym in free_symbols(c.expr):
            v = env.get(sym.name)
            if isinstance(v, tuple):
                env[sym.name] = (int(v[0]), int(v[1]))
    return env


class Interpreter:
    """Walks one task body at one parameter point."""

    def __init__(
        self,
        graph: Graph,
        task: Task,
        point: Mapping[str, int],
        scalars: Mapping[str, tuple[int, int]],
        tensors: dict[str, TensorFinite],
    ):
        self.graph = graph
        self.task = task
        self.point = point
        self.tensors = tensors
        blocks = max(int(bounds(task.grid, point)[1]), 1)
        nranks = max(int(bounds(graph.ranks, point)[1]), 1)
        ints = {k: (int(v[0]), int(v[1])) if isinstance(v, tuple) else v for k, v in scalars.items()}
        self.env: dict = {**point, **ints, "block": (0, blocks - 1), "rank": (0, nranks - 1)}
        self.env["nranks"] = nranks
        self.vars: dict[str, Abs] = {}
        self.merging = False
        self.loops: list[Loop] = []
        self.conds: list[Condition] = []
        self.facts = TaskFacts()

    # ------------------------------------------------------------ numbers
    def ub(self, e: Expr) -> int | None:
        try:
            return int(bounds(e, self.env)[1])
        except EvalError:
            return None

    def lb(self, e: Expr) -> int | None:
        try:
            return int(bounds(e, self.env)[0])
        except EvalError:
            return None

    def exact(self, e: Expr) -> int | None:
        try:
            lo, hi = bounds(e, self.env)
        except EvalError:
            return None
        return int(lo) if lo == hi else None

    # ------------------------------------------------------------ statements
    def run(self) -> TaskFacts:
        self.block(self.task.body)
        return self.facts

    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        if isinstance(s, ir_body.LetS | ir_body.AssignS):
            self.vars[s.name] = self.value(s.value, s.span) or Abs()
            self._int_local(s)
        elif isinstance(s, ir_body.StoreS):
            a = self.value(s.value, s.span)
            finite = a.finite if a is not None and a.marked else None
            if a is not None and not a.marked and isinstance(a.finite, Const) and a.finite.value == 0:
                finite = a.finite  # full(..., -inf): nothing finite
            rows = a.rows if a is not None and a.marked else None
            self.facts.stores.append(
                StoreFact(
                    self.task.name,
                    s.tensor,
                    s.region,
                    finite,
                    rows,
                    tuple(self.loops),
                    tuple(self.conds),
                    s.span,
                )
            )
            self._record_tensor(s, a)
        elif isinstance(s, ir_body.RemoteStoreS):
            self.value(s.value, s.span)
        elif isinstance(s, ir_body.EvalS):
            self.value(s.value, s.span)
        elif isinstance(s, ir_body.ForS):
            saved = dict(self.env)
            lo, hi = self.lb(s.start), self.ub(s.stop)
            if lo is not None and hi is not None and hi - 1 < lo:
                return  # never runs
            loop = Loop(s.var, s.start, s.stop, s.step, s.kind, s.span)
            if lo is not None and hi is not None:
                self.env[s.var] = (lo, hi - 1)
            else:
                self.env.pop(s.var, None)  # data-dependent bounds: the index stays unknown
            self.loops.append(loop)
            carried = dict(self.vars)
            try:
                self.block(s.body)
            finally:
                self.loops.pop()
                self.env = saved
            self._unroll_merges(s, loop, carried)
        elif isinstance(s, ir_body.IfS):
            self._if(s)

    def _unroll_merges(self, s: ir_body.ForS, loop: Loop, carried: dict) -> None:
        """A loop whose body merges a sorted row (``for st in range(2) { s = mrgsort(s, 64) }``)
        applies its stages once per iteration: run the iterations one by one (a known, small
        trip count) for the sort chain, as the unrolled form would be. The facts about stores
        were recorded by the pass over the whole loop; these passes add only sort events."""
        if not any(op.startswith("mrgsort") for op in ops_called(s.body)):
            return
        lo, hi = self.exact(s.start), self.exact(s.stop)
        step = self.exact(s.step)
        if lo is None or hi is None or step is None or step < 1 or len(range(lo, hi, step)) > MAX_UNROLL:
            return
        saved_env, after, stores = dict(self.env), dict(self.vars), len(self.facts.stores)
        self.vars = dict(carried)
        self.loops.append(loop)
        try:
            for v in range(lo, hi, step):
                self.env[s.var] = v
                self.block(s.body)
        finally:
            self.loops.pop()
            self.env = saved_env
            del self.facts.stores[stores:]
        self.vars = {**after, **{k: v for k, v in self.vars.items() if k in after}}

    def _int_local(self, s: ir_body.LetS | ir_body.AssignS) -> None:
        """An integer local (``valid = pl.min(CAP, n)``) ranges over its value's bounds, so a
        valid extent written through it keeps its bound."""
        if isinstance(s.value, ir_body.IntV):
            expr = s.value.expr
            env = self.env
            unknown = {x.name for x in free_symbols(expr) if x.name not in env}
            if unknown:  # a value read from data: unbounded, but min(n, CAP) is still <= CAP
                env = {**env, **{n: (-_WIDE, _WIDE) for n in unknown}}
            try:
                lo, hi = bounds(expr, env)
            except EvalError:
                self.env.pop(s.name, None)
                return
            if hi >= _WIDE // 2:
                self.env.pop(s.name, None)
                return
            self.env[s.name] = int(lo) if lo == hi else (max(int(lo), -_WIDE), int(hi))
        else:
            self.env.pop(s.name, None)

    def _if(self, s: ir_body.IfS) -> None:
        cond = s.cond.expr if isinstance(s.cond, ir_body.IntV) else None
        if cond is not None:
            try:
                lo, hi = bounds(cond, self.env)
            except EvalError:
                lo, hi = 0, 1
            if lo == hi:  # decided at this point (a compile-time condition)
                self.block(s.then if lo else s.orelse)
                return
        before = dict(self.vars)
        saved_env = dict(self.env)
        if cond is not None:
            c = Condition(cond, s.span)
            self.conds.append(c)
            narrowed: dict = dict(self.env)
            narrow(narrowed, [c])
            self.env = _python_ints(narrowed, [c])
        try:
            self.block(s.then)
        finally:
            if cond is not None:
                self.conds.pop()
            then_env, self.env = self.env, dict(saved_env)
        after_then = self.vars
        self.vars = dict(before)
        if cond is not None:
            self.conds.append(Condition(binop("==", cond, Const(0)), s.span))
        try:
            self.block(s.orelse)
        finally:
            if cond is not None:
                self.conds.pop()
        self.vars = {k: _join(after_then.get(k), v) for k, v in self.vars.items()}
        for name in set(then_env) | set(self.env):  # integer locals the arms assigned: their hull
            if name in saved_env and then_env.get(name) == saved_env[name] == self.env.get(name):
                continue
            a, b = then_env.get(name), self.env.get(name)
            if a is None or b is None or name in self.point:
                if name in saved_env:
                    self.env[name] = saved_env[name]
                else:
                    self.env.pop(name, None)
                continue
            alo, ahi = a if isinstance(a, tuple) else (a, a)
            blo, bhi = b if isinstance(b, tuple) else (b, b)
            lo, hi = min(alo, blo), max(ahi, bhi)
            self.env[name] = lo if lo == hi else (lo, hi)

    def _record_tensor(self, s: ir_body.StoreS, a: Abs | None) -> None:
        if not s.region:
            return
        last = s.region[-1]
        env = dict(self.env)
        narrow(env, self.conds)
        env = _python_ints(env, self.conds)
        try:
            if a is not None and a.finite is not None:
                end_expr = binop("+", last.start, a.finite)
                origin = (*a.origin, a.finite, last.start)
            else:
                end_expr = last.stop
                origin = (last.stop, *(lp.stop for lp in self.loops))
            end = int(bounds(end_expr, env)[1])
            stop = int(bounds(last.stop, env)[1])
        except EvalError:
            self.tensors[s.tensor] = TensorFinite(-1, ())  # cannot bound this store: unknown
            return
        end = min(end, stop) if a is not None and a.marked else end
        prev = self.tensors.get(s.tensor)
        if prev is not None and prev.end < 0:
            return
        if prev is None or end > prev.end:
            self.tensors[s.tensor] = TensorFinite(end, origin)

    # ------------------------------------------------------------ values
    def value(self, v, span: Span) -> Abs | None:
        if isinstance(v, ir_body.LocalV):
            return self.vars.get(v.name)
        if isinstance(v, ir_body.LoadV):
            if v.local:
                base = self.vars.get(v.tensor)
                if base is not None and base.chain is not None and v.region:
                    return self._slice(base.chain, v.region[-1], span)
                return Abs()
            return self._load(v)
        if isinstance(v, ir_body.BinV):
            self.value(v.a, span)
            self.value(v.b, span)
            return Abs()
        if isinstance(v, ir_body.CallV):
            return self._call(v, span)
        return None

    def _load(self, v: ir_body.LoadV) -> Abs:
        known = self.tensors.get(v.tensor)
        if known is None or known.end < 0 or not v.region:
            return Abs()
        last = v.region[-1]
        t = v.type
        width = (
            t.shape[-1] if isinstance(t, ir_body.TileType) and t.shape else binop("-", last.stop, last.start)
        )
        # finite columns of the window: those before the producers' end, at most its width
        finite = binop("min", binop("-", Const(known.end), last.start), width)
        return Abs(finite=finite, origin=known.origin)

    def _call(self, v: ir_body.CallV, span: Span) -> Abs:
        merging, self.merging = self.merging, v.op == "mrgsort_merge"  # operands are lists, not readouts
        try:
            args = [self.value(a, span) for a in v.args]
        finally:
            self.merging = merging
        for _, a in v.attrs:
            self.value(a, span)
        op = v.op
        if op in ir_body.VALID_OPS or op == "mask_tail":  # mask_tail(row, n, width): topk's lowering
            rows, cols = ir_body.valid_extents(v) if op != "mask_tail" else (None, v.args[1].expr)
            base = args[0] or Abs()
            finite = cols
            if cols is not None and base.finite is not None:
                finite = binop("min", cols, base.finite)
            origin = (*base.origin, cols) if cols is not None else base.origin
            return Abs(finite=finite, rows=rows, marked=True, origin=origin)
        if op == "full" and len(v.args) == 3 and is_neg_inf(v.args[2]):
            return Abs(finite=Const(0))
        if op == "cast":
            return args[0] or Abs()
        if op == "sort32":
            return self._sort32(v, args[0] or Abs(), span)
        if op == "mrgsort":
            base = args[0]
            if base is None or base.chain is None:
                return Abs()
            bl = self.exact(v.args[1].expr) if isinstance(v.args[1], ir_body.IntV) else None
            if bl is None:
                return Abs()
            return replace(base, chain=self._mrgsort(base.chain, bl, span))
        if op == "mrgsort_merge":
            return self._merge(args, span)
        if op == "topk_pairs":  # the head of a sorted row: a readout, or a format-2 merge operand
            base = args[0]
            if base is not None and base.chain is not None and isinstance(v.args[1], ir_body.IntV):
                width = binop("*", Const(2), v.args[1].expr)
                return self._slice(base.chain, ir_body.Range(Const(0), width, Const(1)), span)
            return Abs()
        return Abs()

    # ------------------------------------------------------------ sort chains
    def _sort32(self, v: ir_body.CallV, base: Abs, span: Span) -> Abs:
        t = v.args[0].type
        if not isinstance(t, ir_body.TileType) or not t.shape:
            return Abs()
        width = self.exact(t.shape[-1])
        if width is None:
            return Abs()
        finite = width if base.finite is None else self.ub(base.finite)
        if finite is None:
            finite = width
        exprs = tuple(e for e in base.origin if e is not None) or ((base.finite,) if base.finite else ())
        text = named_value(finite, exprs, self.point) if base.finite is not None else f"all {width}"
        chain = Chain(width, 32, (), False, max(finite, 0), text, span)
        if finite > width:
            self.facts.sorts.append(SortEvent("row", span, self.task.name, chain, {"width": width}))
        return Abs(chain=chain)

    def _mrgsort(self, chain: Chain, bl: int, span: Span) -> Chain:
        cols = 2 * chain.records
        problems = []
        if bl <= 0 or bl % 64:
            problems.append(f"block_len {bl} is not a multiple of 64")
        elif cols % (4 * bl):
            problems.append(
                f"the row's {cols} columns are not a multiple of 4*block_len = {4 * bl} "
                f"(each repeat merges 4 lists of {bl} columns)"
            )
        elif cols // (4 * bl) > MAX_REPEATS:
            problems.append(f"{cols // (4 * bl)} repeats exceed the ISA limit of {MAX_REPEATS}")
        new = replace(chain, stages=(*chain.stages, bl), stage_spans=(*chain.stage_spans, span))
        if problems:
            self.facts.sorts.append(
                SortEvent("isa", span, self.task.name, chain, {"bl": bl, "why": problems})
            )
            return replace(new, broken=True)
        if bl != 2 * chain.run:
            self.facts.sorts.append(SortEvent("order", span, self.task.name, chain, {"bl": bl}))
            if bl > 2 * chain.run:
                return replace(new, broken=True)  # the lists it merges are not sorted
            return replace(new, run=max(chain.run, 2 * bl))
        return replace(new, run=min(4 * chain.run, chain.records))

    def _slice(self, chain: Chain, cols: ir_body.Range, span: Span) -> Abs:
        """Columns of a sorted row: the head is a readout; a slice of whole runs (the operand
        of a format-2 merge) is itself a sorted list."""
        start, stop = self.exact(cols.start), self.ub(cols.stop)
        if start is None or stop is None:
            return Abs()
        event = None
        if start == 0 and not self.merging:
            event = self._readout(chain, stop, span)  # (a merge operand is a list, not a readout)
        width = 2 * chain.run
        records = (stop - start) // 2
        if start % width or records <= 0:
            return Abs(readout=event)
        within = start // width == (stop - 1) // width
        run = records if within else chain.run
        part = replace(chain, records=records, run=min(run, records), finite=min(chain.finite, records))
        return Abs(chain=part, readout=event)

    def _merge(self, args: list[Abs | None], span: Span) -> Abs:
        """Format-2 ``mrgsort(a, b[, c[, d]])``: 2 to 4 sorted lists into one (pto-isa
        TMRGSORT); the result is sorted only when every operand is."""
        for a in args:  # a head slice bound to a name before the merge: an operand, not a readout
            if a is not None and a.readout is not None:
                self.facts.sorts[:] = [e for e in self.facts.sorts if e is not a.readout]
        chains = [a.chain for a in args if a is not None and a.chain is not None]
        if len(chains) != len(args) or not 2 <= len(chains) <= 4:
            return Abs()
        unsorted = [c for c in chains if c.run < c.records]
        if unsorted and not any(c.broken for c in chains):
            bad = unsorted[0]
            detail = {"bl": 0, "operands": len(chains), "run": bad.run, "records": bad.records}
            self.facts.sorts.append(SortEvent("merge", span, self.task.name, bad, detail))
        if unsorted or any(c.broken for c in chains):
            return Abs(chain=replace(chains[0], broken=True))
        records = sum(c.records for c in chains)
        first = chains[0]
        merged = replace(
            first,
            records=records,
            run=records,
            finite=min(sum(c.finite for c in chains), records),
            stages=(*first.stages, 0),
            stage_spans=(*first.stage_spans, span),
        )
        return Abs(chain=merged)

    def _readout(self, chain: Chain, prefix: int, span: Span) -> SortEvent:
        event = SortEvent("readout", span, self.task.name, chain, {"prefix": prefix})
        self.facts.sorts.append(event)
        return event


def _join(a: Abs | None, b: Abs | None) -> Abs:
    """Merge the states of one variable after the two branches of a runtime ``if``."""
    if a is None or b is None:
        return a or b or Abs()
    if a == b:
        return a
    chain = None
    if a.chain is not None and b.chain is not None:
        chain = replace(a.chain, run=min(a.chain.run, b.chain.run), broken=a.chain.broken or b.chain.broken)
    finite = None
    if a.finite is not None and b.finite is not None:
        finite = binop("max", a.finite, b.finite)
    return Abs(finite=finite, marked=a.marked and b.marked, chain=chain, origin=a.origin + b.origin)
