"""Reading a task body once per source scope, not once per task instance.

An orchestration loop over 40 layers submits the same ``pl.spmd`` scopes 40 times; what
differs between the instances is, almost always, the integers the body captures from the
orchestration (the layer index, an offset computed from it). So a body is read with each
captured integer constant replaced by a symbol (``@layer_idx``), and the summary it yields
(statements, accesses, signals, barriers, ops) is kept as a template. The next instance of
the same scope reuses it, with the symbols replaced by its own values, when every other name
the body looked up outside itself has the same value as at the first read.

A body whose reading *used* the value of a captured integer (a Python-level branch, a static
loop bound) depends on that value: its template is reused only for the same values. The
captured values are in the environment of the first read, so reading with symbols follows
exactly the path a read with the values would.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace

from lowering import body as ir_body
from lowering.ir import Access, BarrierOp, Condition, Loop, SignalOp
from lowering.pypto_reader.values import (
    DtypeVal,
    IntVal,
    PlRef,
    PyVal,
    SeqVal,
    TensorVal,
    Unknown,
    Val,
)
from lowering.source import Span
from lowering.symbolic import EvalError, Expr, Sym, evaluate, free_symbols, substitute

MAX_TEMPLATES_PER_SCOPE = 64
CAPTURE_KIND = "const"  # evaluated from the environment, like a derived constant
ARG = "arg:"  # lookups of the body's bindings (an InCore kernel's parameters), not outer names


@dataclass(frozen=True)
class Export:
    """A tile the body computes that code after the scope uses: ``var``'s final value."""

    var: str
    type: ir_body.TileType
    value: ir_body.Value
    span: Span


@dataclass
class KernelSummary:
    """What reading one task body found."""

    body: tuple[ir_body.Stmt, ...]
    accesses: tuple[Access, ...]
    signals: tuple[SignalOp, ...]
    barriers: tuple[BarrierOp, ...]
    ops: frozenset[str]
    units: frozenset[str]
    signal_tensors: frozenset[str]
    window_tensors: frozenset[str]
    dual_lanes: bool
    exports: tuple[Export, ...] = ()


@dataclass
class _Template:
    lookups: dict[str, object]  # outer name -> fingerprint, as the first read saw it
    roots: dict[str, str]  # outer name -> the tensor it named at the first read
    summary: KernelSummary
    dependent: bool  # the read used a capture's value
    values: dict[str, int | None]  # the captures' values at the first read
    deps: set[int] | None = None  # ids of the parts of the summary that mention a capture or root
    images: Images = field(default_factory=lambda: Images())  # its expressions' substitutions


class Recorder:
    """Stands between a body being read and the names it captures: every integer it captures
    becomes a symbol whose value (when known) is in the environment of the read, and every
    tensor is compared by what the body can see of it (dtype, shape, kind), not its name."""

    def __init__(
        self,
        outer: Callable[[str, ast.AST], Val],
        base_env: Mapping[str, int],
        signature: Callable[[str], object],
    ):
        self.outer = outer
        self.base_env = base_env
        self.signature = signature
        self.lookups: dict[str, object] = {}
        self.roots: dict[str, str] = {}
        self.exprs: dict[str, Expr] = {}
        self.values: dict[str, int | None] = {}
        self.env = _RecordingEnv(base_env)

    def lookup(self, name: str, node: ast.AST) -> Val:
        return self.abstract(name, self.outer(name, node))

    def abstract(self, name: str, value: Val) -> Val:
        if isinstance(value, IntVal):
            self.lookups[name] = ("capture",)
            return IntVal(self._capture(name, value.expr))
        if isinstance(value, TensorVal):
            self.roots[name] = value.root
            if value.offsets is None or value.shape is None:
                self.lookups[name] = (
                    "tensor",
                    self.signature(value.root),
                    value.offsets,
                    value.shape,
                    value.dropped,
                )
                return value
            offsets = tuple(self._capture(f"{name}.o{i}", e) for i, e in enumerate(value.offsets))
            shape = tuple(self._capture(f"{name}.s{i}", e) for i, e in enumerate(value.shape))
            self.lookups[name] = ("view", self.signature(value.root), value.dropped, len(offsets), len(shape))
            return TensorVal(value.root, offsets, shape, value.dropped)
        self.lookups[name] = fingerprint(value)
        return value

    def _capture(self, name: str, expr: Expr) -> Expr:
        self.exprs[name] = expr
        self.values[name] = v = _value(expr, self.base_env)
        if v is not None:
            self.env.captures["@" + name] = v
        return Sym("@" + name, CAPTURE_KIND)

    def mapping(self) -> dict[str, Expr]:
        return {"@" + k: e for k, e in self.exprs.items()}


class _RecordingEnv(dict):
    """The parameter environment plus the captured values; notes when a capture is read."""

    def __init__(self, base: Mapping[str, int]):
        super().__init__(base)
        self.captures: dict[str, int] = {}
        self.used = False

    def __getitem__(self, key: str) -> int:
        if key in self.captures:
            self.used = True
            return self.captures[key]
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        return key in self.captures or super().__contains__(key)

    def get(self, key, default=None):  # type: ignore[override]
        if key in self.captures:
            self.used = True
            return self.captures[key]
        return super().get(key, default)


class KernelCache:
    def __init__(self) -> None:
        self.templates: dict[tuple, list[_Template]] = {}
        self.hits = 0
        self.misses = 0

    def find(
        self,
        key: tuple,
        outer: Callable[[str, ast.AST], Val],
        bindings: Mapping[str, Val],
        env: Mapping[str, int],
        signature: Callable[[str], object],
        node: ast.AST,
    ) -> KernelSummary | None:
        for t in self.templates.get(key, ()):
            match = _match(t, outer, bindings, signature, node)
            if match is None:
                continue
            exprs, renames = match
            if t.dependent and any(_value(e, env) != t.values[n] for n, e in exprs.items()):
                continue
            self.hits += 1
            if t.deps is None:
                t.deps = _dependencies(t.summary, set(t.values), set(t.roots.values()))
            mapping = {"@" + k: e for k, e in exprs.items()}
            return instantiate(t.summary, mapping, renames, t.deps, t.images)
        return None

    def store(self, key: tuple, recorder: Recorder, summary: KernelSummary) -> KernelSummary:
        self.misses += 1
        bucket = self.templates.setdefault(key, [])
        if len(bucket) < MAX_TEMPLATES_PER_SCOPE:
            bucket.append(
                _Template(
                    dict(recorder.lookups),
                    dict(recorder.roots),
                    summary,
                    recorder.env.used,
                    dict(recorder.values),
                )
            )
        return instantiate(summary, recorder.mapping(), {})


def _match(t: _Template, outer, bindings, signature, node) -> tuple[dict[str, Expr], dict[str, str]] | None:
    """The captures and tensor renames under which ``t`` stands for this instance, if it does."""
    exprs: dict[str, Expr] = {}
    renames: dict[str, str] = {}
    for name, fp in t.lookups.items():
        v = bindings.get(name[len(ARG) :], Unknown("unbound")) if name.startswith(ARG) else outer(name, node)
        kind = fp[0] if isinstance(fp, tuple) and fp else None
        if kind == "capture":
            if not isinstance(v, IntVal):
                return None
            exprs[name] = v.expr
            continue
        if kind in ("tensor", "view"):
            if not isinstance(v, TensorVal) or signature(v.root) != fp[1]:
                return None
            if kind == "tensor":
                if (v.offsets, v.shape, v.dropped) != fp[2:]:
                    return None
            else:
                if (
                    v.offsets is None
                    or v.shape is None
                    or (v.dropped, len(v.offsets), len(v.shape)) != fp[2:]
                ):
                    return None
                exprs.update({f"{name}.o{i}": e for i, e in enumerate(v.offsets)})
                exprs.update({f"{name}.s{i}": e for i, e in enumerate(v.shape)})
            old = t.roots[name]
            if renames.get(old, v.root) != v.root:
                return None  # two names that were one tensor are two now (or the reverse)
            renames[old] = v.root
            continue
        if fingerprint(v) != fp:
            return None
    if len(set(renames.values())) != len(renames):
        return None
    return exprs, {a: b for a, b in renames.items() if a != b}


def fingerprint(v: Val) -> object:
    """A hashable identity of a value, equal for values a body cannot tell apart."""
    if isinstance(v, IntVal | TensorVal | PlRef | DtypeVal):
        return v
    if isinstance(v, PyVal):
        try:
            hash(v.value)
        except TypeError:
            return ("id", id(v))
        return ("py", type(v.value).__name__, v.value)
    if isinstance(v, Unknown):
        return ("unknown", v.why)
    if isinstance(v, SeqVal):
        return ("seq", v.kind, tuple(fingerprint(i) for i in v.items))
    return ("id", id(v))


def _value(expr: Expr, env: Mapping[str, int]) -> int | None:
    try:
        return evaluate(expr, env)
    except EvalError:
        return None


class Images:
    """The substitutions of one template's expressions, shared by its instances: the image of an
    expression depends only on what its own free symbols map to, and most expressions of a body
    mention captures that are the same in every instance (a parameter, a constant)."""

    def __init__(self) -> None:
        self.symbols: dict[int, tuple[str, ...]] = {}  # id of a template expression -> its free names
        self.done: dict[tuple, Expr] = {}  # (id, the images of those names) -> image

    def substitute(self, expr: Expr, mapping: Mapping[str, Expr]) -> Expr:
        names = self.symbols.get(id(expr))
        if names is None:
            names = self.symbols[id(expr)] = tuple(sorted({s.name for s in free_symbols(expr)}))
        key = (id(expr), *[mapping.get(n) for n in names])
        image = self.done.get(key)
        if image is None:
            image = self.done[key] = substitute(expr, mapping)
        return image


def instantiate(
    summary: KernelSummary,
    mapping: dict[str, Expr],
    renames: dict[str, str],
    deps: set[int] | None = None,
    images: Images | None = None,
) -> KernelSummary:
    """The summary with the capture symbols replaced by what was captured, and the tensors of
    the first read by this instance's. ``images`` (only for a template that outlives the call:
    its keys are ids of the template's expressions) shares substitutions between instances."""
    if not mapping and not renames:
        return summary
    if deps is None:
        deps = _dependencies(summary, {k[1:] for k in mapping}, set(renames))
    subst = images.substitute if images is not None else substitute
    sub = _Substituter(mapping, renames, deps, subst)
    fast = _Summaries(mapping, renames, deps, subst)
    template = summary.body
    return replace(
        summary,
        body=LazyBody(lambda: sub.walk(template)),  # rules that read bodies are few: walk on demand
        accesses=tuple([fast.access(a) for a in summary.accesses]),
        signals=tuple([fast.signal(x) for x in summary.signals]),
        barriers=tuple([fast.barrier(b) for b in summary.barriers]),
        signal_tensors=frozenset(renames.get(n, n) for n in summary.signal_tensors),
        window_tensors=frozenset(renames.get(n, n) for n in summary.window_tensors),
        exports=tuple([sub.walk(e) for e in summary.exports]),
    )


class _Substituter:
    """Rebuilds the parts of a template that mention a capture (``deps``; all when None)."""

    def __init__(
        self,
        mapping: dict[str, Expr],
        renames: dict[str, str],
        deps: set[int] | None,
        subst: Callable[[Expr, Mapping[str, Expr]], Expr] = substitute,
    ):
        self.mapping = mapping
        self.renames = renames
        self.deps = deps
        self.subst = subst
        self.memo: dict[int, object] = {}

    def walk(self, obj):
        deps = self.deps
        key = id(obj)
        if deps is not None and key not in deps:
            return obj  # mentions no capture
        if isinstance(obj, Expr):
            return self.subst(obj, self.mapping)
        done = self.memo.get(key)
        if done is not None:
            return done
        if isinstance(obj, tuple):
            walk = self.walk
            if deps is None:
                items = [walk(x) for x in obj]
            else:
                items = [x if id(x) not in deps else walk(x) for x in obj]
            out = obj if all(map(operator.is_, items, obj)) else tuple(items)
        elif hasattr(obj, "__dataclass_fields__") and not isinstance(obj, type):
            cls = type(obj)
            get, renamed, walked = _plan(cls)
            values = get(obj)
            changed = False
            for i in renamed:
                old = values[i]
                if isinstance(old, str) and old in self.renames and not getattr(obj, "local", False):
                    if not changed:
                        values, changed = list(values), True
                    values[i] = self.renames[old]
            for i in walked:
                old = values[i]
                if deps is not None and id(old) not in deps:
                    continue
                new = self.walk(old)
                if new is not old:
                    if not changed:
                        values, changed = list(values), True
                    values[i] = new
            out = cls(*values) if changed else obj
        else:
            out = obj
        self.memo[key] = out
        return out


class _Summaries:
    """The same substitution as ``_Substituter``, written out for the summary records that every
    instance needs at once (accesses, signals, barriers): edge inference reads all of them."""

    def __init__(
        self,
        mapping: dict[str, Expr],
        renames: dict[str, str],
        deps: set[int],
        subst: Callable[[Expr, Mapping[str, Expr]], Expr] = substitute,
    ):
        self.mapping = mapping
        self.renames = renames
        self.deps = deps
        self.subst = subst
        self.memo: dict[int, object] = {}

    def e(self, x):
        if x is None or id(x) not in self.deps:
            return x
        return self.subst(x, self.mapping)

    def loops(self, loops: tuple[Loop, ...]) -> tuple[Loop, ...]:
        if id(loops) not in self.deps:
            return loops
        out = []
        for lp in loops:
            done = self.memo.get(id(lp))
            if done is None:
                done = (
                    lp
                    if id(lp) not in self.deps
                    else Loop(lp.var, self.e(lp.start), self.e(lp.stop), self.e(lp.step), lp.kind, lp.span)
                )
                self.memo[id(lp)] = done
            out.append(done)
        return tuple(out)

    def conds(self, conds: tuple[Condition, ...]) -> tuple[Condition, ...]:
        if id(conds) not in self.deps:
            return conds
        return tuple([c if id(c) not in self.deps else Condition(self.e(c.expr), c.span) for c in conds])

    def access(self, a: Access) -> Access:
        if id(a) not in self.deps:
            return a
        region = a.region
        if id(region) in self.deps:
            region = tuple(
                [
                    r
                    if id(r) not in self.deps
                    else ir_body.Range(self.e(r.start), self.e(r.stop), self.e(r.step), r.point)
                    for r in region
                ]
            )
        tensor = self.renames.get(a.tensor, a.tensor)
        return Access(
            tensor,
            a.mode,
            region,
            a.dtype,
            self.loops(a.loops),
            self.conds(a.conds),
            a.span,
            a.order,
            self.e(a.peer),
            name=a.name,
            opaque=a.opaque,
        )

    def signal(self, x: SignalOp) -> SignalOp:
        if id(x) not in self.deps:
            return x
        index = tuple([self.e(i) for i in x.index])
        return SignalOp(
            x.kind, self.renames.get(x.signal, x.signal), index, self.loops(x.loops), self.conds(x.conds), x.span,
            x.order, self.e(x.peer), x.op, self.e(x.value), x.cmp, self.e(x.expected),
        )  # fmt: skip

    def barrier(self, b: BarrierOp) -> BarrierOp:
        if id(b) not in self.deps:
            return b
        return BarrierOp(b.soft, self.loops(b.loops), self.conds(b.conds), b.span, b.order)


_PLANS: dict[type, tuple[Callable[[object], tuple], tuple[int, ...], tuple[int, ...]]] = {}


def _plan(cls: type) -> tuple[Callable[[object], tuple], tuple[int, ...], tuple[int, ...]]:
    """A dataclass's field values getter (all fields, in order), the indices of the fields that
    name a tensor, and those of the other fields that may mention a capture."""
    found = _PLANS.get(cls)
    if found is None:
        names = tuple(f.name for f in fields(cls))
        get = operator.attrgetter(*names) if len(names) > 1 else _one_tuple(names)
        renamed = tuple(i for i, n in enumerate(names) if n in _NAME_FIELDS)
        walked = tuple(i for i, n in enumerate(names) if n not in _SKIP and n not in _NAME_FIELDS)
        found = _PLANS[cls] = (get, renamed, walked)
    return found


def _one_tuple(names: tuple[str, ...]) -> Callable[[object], tuple]:
    """``operator.attrgetter`` for zero or one field, as a tuple like ``attrgetter`` of several gives."""
    return lambda obj: tuple(getattr(obj, n) for n in names)


def _dependencies(summary: KernelSummary, names: set[str], roots: set[str]) -> set[int]:
    """Ids of the objects of ``summary`` that (transitively) mention a capture symbol or a tensor
    the body captured."""
    symbols = {"@" + n for n in names}
    out: set[int] = set()
    seen: dict[int, bool] = {}

    def visit(obj) -> bool:
        key = id(obj)
        if key in seen:
            return seen[key]
        found = False
        if isinstance(obj, Sym):
            found = obj.name in symbols
        elif isinstance(obj, Expr):
            found = any(s.name in symbols for s in free_symbols(obj))
        elif isinstance(obj, tuple):
            found = any([visit(x) for x in obj])
        elif is_dataclass(obj) and not isinstance(obj, type):
            found = any([visit(getattr(obj, f)) for f in _fields(type(obj))])
            found = found or any(getattr(obj, f, None) in roots for f in _NAME_FIELDS)
        seen[key] = found
        if found:
            out.add(key)
        return found

    for part in (summary.body, summary.accesses, summary.signals, summary.barriers, summary.exports):
        visit(part)
    return out


class LazyBody(Sequence):
    """The statements of an instance, substituted from its template when first read."""

    __slots__ = ("_make", "_items")

    def __init__(self, make: Callable[[], tuple]):
        self._make = make
        self._items: tuple | None = None

    def _get(self) -> tuple:
        if self._items is None:
            self._items = self._make()
            self._make = None  # type: ignore[assignment]
        return self._items

    def __getitem__(self, i):  # type: ignore[override]
        return self._get()[i]

    def __len__(self) -> int:
        return len(self._get())

    def __iter__(self):
        return iter(self._get())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._get())


_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIP = {"span", "header_span"}
_NAME_FIELDS = ("tensor", "signal")  # fields that name a tensor (renamed between instances)


def _fields(cls: type) -> tuple[str, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = tuple(f.name for f in fields(cls) if f.name not in _SKIP)
        _FIELDS[cls] = found
    return found
