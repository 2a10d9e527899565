"""Making an instance's summary from a template: the capture symbols replaced by the
instance's values and the template's tensors renamed to the instance's.

Only the parts of a template that mention a capture or a captured tensor are rebuilt
(``dependencies``); the rest is shared with the template. The accesses, signals and barriers
are substituted at once, since edge inference reads all of them, and the statements only
when a rule reads them (``LazyBody``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass, replace

from lowering import body as ir_body
from lowering.ir import Access, BarrierOp, Condition, Loop, SignalOp
from lowering.pypto_reader.kernel_summary import KernelSummary
from lowering.symbolic import Expr, Sym, free_symbols, substitute


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
        deps = dependencies(summary, {k[1:] for k in mapping}, set(renames))
    subst = images.substitute if images is not None else substitute
    sub = _Substituter(mapping, renames, deps, subst)
    fast = _Summaries(mapping, renames, deps, subst)
    template = summary.body
    return replace(
        summary,
        # rules that read bodies are few: walk on demand
        body=LazyBody(lambda: sub.walk(template), template, renames, mapping=mapping),
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


def dependencies(summary: KernelSummary, names: set[str], roots: set[str]) -> set[int]:
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
    """The statements of an instance, substituted from its template when first read.

    ``template`` and ``renames`` say what they will be without making them: the template's
    statements with its tensors renamed and its captures replaced by this instance's values,
    followed by ``extra`` (statements already made); ``mapping`` holds those values. What a
    summary of names needs (the tensors loaded and stored, the ops called) is the template's,
    renamed."""

    __slots__ = ("_make", "_items", "template", "renames", "extra", "mapping")

    def __init__(
        self,
        make: Callable[[], tuple],
        template: tuple | None = None,
        renames: Mapping[str, str] | None = None,
        extra: tuple = (),
        mapping: Mapping[str, Expr] | None = None,
    ):
        self._make = make
        self._items: tuple | None = None
        self.template = template
        self.renames = renames or {}
        self.extra = extra
        self.mapping = mapping or {}

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
