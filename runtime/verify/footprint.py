"""What a kernel can touch: a static read/write summary from its source, per tensor.

Partial-order reduction needs to know which block steps commute.  Two steps commute when
neither writes what the other reads or writes - except adds, which commute with adds (integer
atomics and AtomicAdd notifies; *floating-point* atomics do not: their sum depends on the
order, which is what determinism checking is for).  Reads cannot be observed on a plain NumPy
array, so the summary comes from the kernel's source, parsed with :mod:`ast` (never executed):

* ``t_x = ctx.t('x')`` binds an alias; ``t_x[...] = v`` writes ``x``, ``t_x[...] += v`` reads
  and writes it, any other use reads it - or, passed to a callee that may mutate it (anything
  but ``runtime.tileops``, NumPy's non-mutating functions and a few builtins), writes it;
* ``ctx.peer('w', p)[...] = v`` writes window ``w`` on a peer, a load from it reads it;
* ``ctx.atomic_add('x', ...)`` is an atomic add (on a peer with ``peer=``);
* ``ctx.notify('s', ..., op)`` adds to (or sets) a peer's signal cell, ``ctx.wait('s', ...)``
  reads one of this rank's cells.

Anything the analysis cannot follow - source that cannot be found or parsed, ``ctx`` passed
along, a tensor name that is not a literal, an alias rebound - makes the summary *unknown*:
the kernel is then taken to read and write everything, which is always safe and only costs
reduction.  The explorer checks the summary against what a step actually did where it can
(every peer, notify and wait is observed on ``ctx``), so the summary only has to be right about
this rank's tensors.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

#: ``ctx`` attributes that are plain values.
_CTX_VALUES = {"block", "nblocks", "rank", "nranks", "epoch", "round", "task"}
#: Callees that never write into an array argument.
_PURE_BUILTINS = {
    "int",
    "float",
    "bool",
    "len",
    "range",
    "min",
    "max",
    "abs",
    "sum",
    "tuple",
    "list",
    "print",
}
_NUMPY_MUTATORS = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}
#: Array attributes that only read.
_READ_ATTRS = {
    "shape",
    "dtype",
    "ndim",
    "size",
    "T",
    "copy",
    "astype",
    "sum",
    "max",
    "min",
    "tobytes",
    "item",
}


@dataclass(frozen=True)
class Footprint:
    """Tensor names a kernel may access, by kind of access; ``unknown`` means "anything"."""

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    peer_reads: frozenset[str] = frozenset()
    peer_writes: frozenset[str] = frozenset()
    atomics: frozenset[str] = frozenset()
    peer_atomics: frozenset[str] = frozenset()
    notify_add: frozenset[str] = frozenset()
    notify_set: frozenset[str] = frozenset()
    waits: frozenset[str] = frozenset()
    barriers: bool = False
    #: every tensor access is a direct subscript of ``ctx.t(...)``/``ctx.peer(...)`` (or of an
    #: alias of one), so observing the subscripts observes every element the kernel touches
    exact: bool = False
    unknown: bool = False
    why: str = ""


UNKNOWN = Footprint(unknown=True, why="no source")


@dataclass
class _Collect:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    peer_reads: set[str] = field(default_factory=set)
    peer_writes: set[str] = field(default_factory=set)
    atomics: set[str] = field(default_factory=set)
    peer_atomics: set[str] = field(default_factory=set)
    notify_add: set[str] = field(default_factory=set)
    notify_set: set[str] = field(default_factory=set)
    waits: set[str] = field(default_factory=set)
    barriers: bool = False
    exact: bool = True

    def freeze(self) -> Footprint:
        sets = {k: frozenset(v) for k, v in self.__dict__.items() if isinstance(v, set)}
        return Footprint(**sets, barriers=self.barriers, exact=self.exact)


class _Unknown(Exception):
    pass


def _literal(node: ast.AST | None) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise _Unknown("a tensor name that is not a string literal")


def _function_node(fn: Any) -> ast.FunctionDef | ast.Lambda:
    func = getattr(fn, "__func__", fn)
    if not inspect.isfunction(func):
        raise _Unknown(f"{type(fn).__name__} is not a plain function")
    try:
        src = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError) as e:
        raise _Unknown(f"source not parseable ({type(e).__name__})") from None
    name = func.__name__
    if name == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        if len(lambdas) != 1:
            raise _Unknown("a lambda that cannot be told apart on its source line")
        return lambdas[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    raise _Unknown(f"no definition of {name!r} in its source")


def _parents(root: ast.AST) -> dict[int, ast.AST]:
    out: dict[int, ast.AST] = {}
    for node in ast.walk(root):
        for child in ast.iter_child_nodes(node):
            out[id(child)] = node
    return out


def _mutating_callee(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id not in _PURE_BUILTINS
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        if f.value.id == "_op":
            return False
        if f.value.id == "np":
            return f.attr in _NUMPY_MUTATORS
    return True


def kernel_footprint(fn: Any) -> Footprint:
    """The footprint of kernel ``fn(ctx)`` (cached per function by the caller)."""
    try:
        node = _function_node(fn)
        return _analyse(node)
    except _Unknown as e:
        return Footprint(unknown=True, why=str(e))


def _analyse(fn_node: ast.FunctionDef | ast.Lambda) -> Footprint:
    args = fn_node.args.args
    if not args:
        raise _Unknown("a kernel without a ctx parameter")
    ctx = args[0].arg
    parent = _parents(fn_node)
    out = _Collect()
    aliases: dict[str, str] = {}
    alias_defs: set[int] = set()
    # Aliases first: `t_x = ctx.t('x')` anywhere in the body (generated kernels bind them on top).
    for node in ast.walk(fn_node):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _is_ctx_call(node.value, ctx, "t")
        ):
            target = node.targets[0].id
            name = _literal(node.value.args[0] if node.value.args else None)
            if aliases.get(target, name) != name:
                raise _Unknown(f"alias {target!r} bound to two tensors")
            aliases[target] = name
            alias_defs.add(id(node.targets[0]))
            alias_defs.add(id(node.value))
    views = _view_locals(fn_node, ctx, aliases)
    for node in ast.walk(fn_node):
        if isinstance(node, ast.Name):
            if node.id == ctx and not _ctx_use_ok(node, parent):
                raise _Unknown("ctx is used other than through its methods")
            if node.id in aliases and id(node) not in alias_defs:
                _alias_use(node, aliases[node.id], parent, out)
            elif node.id in views and _mutates(node, parent):
                out.writes.add(views[node.id])  # written through a view held in a local
                out.exact = False
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if isinstance(f.value, ast.Name) and f.value.id == ctx:
                if id(node) not in alias_defs:
                    _ctx_call(node, f.attr, parent, out)
    return out.freeze()


def _view_locals(fn_node: ast.AST, ctx: str, aliases: dict[str, str]) -> dict[str, str]:
    """Locals bound to a subscript of a tensor (possibly a view of it): local -> tensor."""
    out: dict[str, str] = {}
    for node in ast.walk(fn_node):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
            base = node.value.value
            name = None
            if isinstance(base, ast.Name) and base.id in aliases:
                name = aliases[base.id]
            elif _is_ctx_call(base, ctx, "t") or _is_ctx_call(base, ctx, "peer"):
                try:
                    name = _literal(base.args[0] if base.args else None)
                except _Unknown:
                    name = None
            if name is not None:
                for t in node.targets:
                    names = t.elts if isinstance(t, ast.Tuple | ast.List) else [t]
                    for n in names:
                        if isinstance(n, ast.Name):
                            out[n.id] = name
    return out


def _mutates(node: ast.Name, parent: dict[int, ast.AST]) -> bool:
    """Is this use of a local one that writes into the array it names?"""
    p = parent.get(id(node))
    if isinstance(node.ctx, ast.Store) and isinstance(p, ast.AugAssign):
        return True
    if isinstance(p, ast.Subscript) and p.value is node and isinstance(p.ctx, ast.Store | ast.Del):
        return True
    if isinstance(p, ast.Attribute) and p.value is node and p.attr not in _READ_ATTRS:
        return True
    return isinstance(p, ast.Call) and node is not p.func and _mutating_callee(p)


def _is_ctx_call(node: ast.AST, ctx: str, attr: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == attr
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == ctx
    )


def _ctx_use_ok(node: ast.Name, parent: dict[int, ast.AST]) -> bool:
    p = parent.get(id(node))
    if isinstance(p, ast.arguments | ast.arg):
        return True
    if isinstance(p, ast.Attribute) and p.value is node:
        if p.attr in _CTX_VALUES:
            return True
        q = parent.get(id(p))
        return isinstance(q, ast.Call) and q.func is p
    return False


def _alias_use(node: ast.Name, tensor: str, parent: dict[int, ast.AST], out: _Collect) -> None:
    if isinstance(node.ctx, ast.Store | ast.Del):
        raise _Unknown(f"alias of {tensor!r} rebound")
    p = parent.get(id(node))
    if isinstance(p, ast.Subscript) and p.value is node:
        if isinstance(p.ctx, ast.Store | ast.Del):
            q = parent.get(id(p))
            out.writes.add(tensor)
            if isinstance(q, ast.AugAssign):
                out.reads.add(tensor)
            return
        _loaded(p, tensor, parent, out)
        return
    out.exact = False  # the array itself escapes the subscript: its accesses cannot be seen
    if isinstance(p, ast.Attribute) and p.value is node:
        out.reads.add(tensor)
        if p.attr not in _READ_ATTRS:
            out.writes.add(tensor)
        return
    _loaded(node, tensor, parent, out)


def _loaded(node: ast.AST, tensor: str, parent: dict[int, ast.AST], out: _Collect) -> None:
    """A load of (a view of) ``tensor``; passed to a callee that may mutate it, also a write."""
    out.reads.add(tensor)
    p = parent.get(id(node))
    if isinstance(p, ast.Call) and node is not p.func and _mutating_callee(p):
        out.writes.add(tensor)
        out.exact = False
    elif isinstance(p, ast.Subscript) and p.value is node and isinstance(p.ctx, ast.Store | ast.Del):
        out.writes.add(tensor)  # t[a][b] = v writes through the view t[a]
        out.exact = False


def _ctx_call(call: ast.Call, attr: str, parent: dict[int, ast.AST], out: _Collect) -> None:
    first = call.args[0] if call.args else None
    if attr == "scalar":
        return
    if attr == "barrier":
        out.barriers = True
        return
    if attr == "t":
        name = _literal(first)
        p = parent.get(id(call))
        if isinstance(p, ast.Subscript) and p.value is call:
            if isinstance(p.ctx, ast.Store | ast.Del):
                out.writes.add(name)
                if isinstance(parent.get(id(p)), ast.AugAssign):
                    out.reads.add(name)
            else:
                _loaded(p, name, parent, out)
            return
        out.reads.add(name)
        out.writes.add(name)
        out.exact = False
        return
    if attr == "peer":
        name = _literal(first)
        p = parent.get(id(call))
        if isinstance(p, ast.Subscript) and p.value is call:
            if isinstance(p.ctx, ast.Store | ast.Del):
                out.peer_writes.add(name)
                if isinstance(parent.get(id(p)), ast.AugAssign):
                    out.peer_reads.add(name)
            else:
                out.peer_reads.add(name)
                q = parent.get(id(p))
                if isinstance(q, ast.Call) and p is not q.func and _mutating_callee(q):
                    out.peer_writes.add(name)
                    out.exact = False
        else:
            out.peer_reads.add(name)
            out.peer_writes.add(name)
            out.exact = False
        return
    if attr == "atomic_add":
        name = _literal(first)
        peer = next((k.value for k in call.keywords if k.arg == "peer"), None)
        if peer is None and len(call.args) > 3:
            peer = call.args[3]
        local = peer is None or (isinstance(peer, ast.Constant) and peer.value is None)
        (out.atomics if local else out.peer_atomics).add(name)
        return
    if attr == "notify":
        name = _literal(first)
        op = next((k.value for k in call.keywords if k.arg == "op"), None)
        if op is None and len(call.args) > 4:
            op = call.args[4]
        is_add = op is None or (isinstance(op, ast.Constant) and op.value == "add")
        (out.notify_add if is_add else out.notify_set).add(name)
        return
    if attr == "wait":
        out.waits.add(_literal(first))
        return
    raise _Unknown(f"ctx.{attr}(...) is not a kernel operation")


_PRED_NAMES = {"t", "scalar", "rank", "nranks", "bool", "int", "float", "abs", "min", "max"}


def predicate_reads(fn: Any, tensors: set[str]) -> set[str] | None:
    """Tensors a predicate ``fn(mem)`` reads, or None when that cannot be told (then: all)."""
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is None or getattr(func, "__closure__", None) or not set(code.co_names) <= _PRED_NAMES:
        return None
    found: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        for k in c.co_consts:
            if isinstance(k, str) and k in tensors:
                found.add(k)
            elif hasattr(k, "co_consts"):
                stack.append(k)
    return found or None
