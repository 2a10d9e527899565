"""``reduce_sum``: split-K accumulation lowered to disjoint partials and an ordered reduce.

    task linear spmd(G) { ...; dst[region] = reduce_sum s in range(S) { ...; return part } }

becomes

    scratch linear_partials: dtype[S * D0, D1, ...]
    task linear_splits spmd(G * S) {    # block -> block / S in the statements before reduce_sum
      ...; let s = block % S; ...; linear_partials[s * D0 + region] = part
    }
    task linear spmd(G) on aiv after linear_splits {
      let acc = linear_partials[0 * D0 + region]
      for s in range(1, S) { acc = acc + linear_partials[s * D0 + region] }
      dst[region] = acc
    }

The lowered tasks keep the author's names, so generated code reads like the source: the split
index is ``s`` in both tasks (substituted by ``block % S`` only where ``s`` names something
else of the layer), and the accumulator is the name the body returns (``return acc``) or
``acc``, made unique among the layer's names (``acc2``, ...).

Partials are written plainly (each split owns its slice), so there is no zero seed and no
atomic, and the sum order is fixed: ((p0 + p1) + p2) + ... The reducing task keeps the
original name, so ``after linear`` still means "after the whole result exists".
``runtime.reduction.ascending_sum`` evaluates the same tree for goldens. The reducing task
carries an ``ast.ReductionDecl`` (the split count, and the chunks each split folds when the
body shows them) that elaboration records in ``Graph.reductions`` for rule N203.
"""

from __future__ import annotations

from dsl import ast
from dsl.codes import diag
from dsl.sugar.subst import map_children, names_used, substitute
from lowering.source import CompileError, Diagnostic, Span


def lower_reduce_sums(module: ast.Module) -> ast.Module:
    errors: list[Diagnostic] = []
    layers = tuple(_layer(layer, errors) for layer in module.layers)
    if errors:
        raise CompileError(errors)
    return ast.Module(module.span, layers)


def _contains_reduce(node) -> bool:
    found = False

    def visit(n):
        nonlocal found
        if isinstance(n, ast.ReduceSum):
            found = True
        return map_children(n, visit)

    visit(node)
    return found


def _decls(stmts) -> dict[str, ast.TensorDecl]:
    out: dict[str, ast.TensorDecl] = {}
    for s in stmts:
        if isinstance(s, ast.TensorDecl):
            out[s.name] = s
        elif isinstance(s, ast.LayerFor):
            out.update(_decls(s.body))
        elif isinstance(s, ast.LayerIf):
            out.update(_decls(s.then))
            out.update(_decls(s.orelse))
    return out


def _layer(layer: ast.Layer, errors: list[Diagnostic]) -> ast.Layer:
    if not _contains_reduce(layer):
        return layer
    decls = _decls(layer.body)
    return ast.Layer(
        layer.span,
        layer.name,
        layer.params,
        _stmts(layer.body, decls, errors, _declared(layer)),
    )


def _stmts(stmts, decls, errors, declared: set[str], in_loop: bool = False) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, ast.LayerFor):
            out.append(
                ast.LayerFor(s.span, s.var, s.kind, s.args, _stmts(s.body, decls, errors, declared, True))
            )
        elif in_loop and isinstance(s, ast.TaskDef) and _contains_reduce(s):
            errors.append(
                diag(
                    "E405",
                    s.span,
                    "reduce_sum in a task array is not supported",
                    hint="use one spmd task with a larger grid",
                )
            )
        elif isinstance(s, ast.LayerIf):
            out.append(
                ast.LayerIf(
                    s.span,
                    s.cond,
                    _stmts(s.then, decls, errors, declared),
                    _stmts(s.orelse, decls, errors, declared),
                )
            )
        elif isinstance(s, ast.TaskDef) and _contains_reduce(s):
            try:
                out.extend(_task(s, decls, declared))
            except CompileError as err:
                errors.extend(err.diagnostics)
        else:
            out.append(s)
    return tuple(out)


def _fail(node: ast.Node, code: str, message: str, hint: str | None = None) -> CompileError:
    return CompileError([diag(code, node.span, message, hint=hint)])


def _task(task: ast.TaskDef, decls: dict[str, ast.TensorDecl], declared: set[str]) -> list:
    body = list(task.body)
    last = body[-1] if body else None
    if not (isinstance(last, ast.Store) and isinstance(last.value, ast.ReduceSum)):
        where = next((s for s in body if _contains_reduce(s)), task)
        raise _fail(where, "E405", "reduce_sum must be the value of the task's last statement, a plain store")
    pre, store = body[:-1], last
    red: ast.ReduceSum = store.value
    if any(_contains_reduce(s) for s in pre) or _contains_reduce(red.body):
        raise _fail(red, "E405", "only one reduce_sum per task, not nested")
    if len(red.args) != 1:
        raise _fail(red, "E404", "reduce_sum iterates over range(S): one argument, the split count")
    count = red.args[0]
    rets = [s for s in red.body if isinstance(s, ast.Return)]
    if len(rets) != 1 or red.body[-1] is not rets[0]:
        raise _fail(red, "E405", "a reduce_sum body ends with exactly one `return <partial>`")
    if task.manual:
        raise _fail(task, "E405", "reduce_sum in a manual task: the lowered edges would be dropped")
    decl = decls.get(store.target.name)
    if decl is None:
        raise _fail(store.target, "E201", f"unknown tensor '{store.target.name}'")
    if len(store.target.subscripts) != len(decl.shape):
        raise _fail(store.target, "E304", f"'{decl.name}' has {len(decl.shape)} dims")

    sp = red.span
    grid = task.spmd if task.spmd is not None else ast.IntLit(sp, 1)
    d0 = decl.shape[0]
    partials = f"{task.name}_partials"
    splits = f"{task.name}_splits"

    def binop(op, a, b):
        return ast.Binary(sp, op, a, b)

    def region(split: ast.Expr) -> tuple:
        first = store.target.subscripts[0]
        offset = binop("*", split, d0)
        if isinstance(first, ast.Slice):
            start = first.start if first.start is not None else ast.IntLit(sp, 0)
            stop = first.stop if first.stop is not None else d0
            new = ast.Slice(first.span, binop("+", offset, start), binop("+", offset, stop), first.step)
        else:
            new = ast.Slice(
                first.span,
                binop("+", offset, first),
                binop("+", binop("+", offset, first), ast.IntLit(sp, 1)),
                None,
            )
        return (new, *store.target.subscripts[1:])

    def access(split: ast.Expr) -> ast.Access:
        return ast.Access(store.target.span, partials, store.target.name_span, region(split))

    block = ast.Name(sp, "block")
    split_var = ast.Name(sp, red.var)
    to_split_grid = {"block": binop("/", block, count)}
    producer_body = [substitute(s, to_split_grid) for s in pre]
    if red.var in _bound(pre) | declared:  # the split index cannot be named: substitute it
        inner = {**to_split_grid, red.var: binop("%", block, count)}
        split_of_block = []
    else:  # keep the author's name for the split index: `let s = block % S`
        inner = to_split_grid
        split_of_block = [ast.Let(sp, red.var, binop("%", block, count))]
    producer_body += split_of_block + [substitute(s, inner) for s in red.body[:-1]]
    producer_body.append(
        ast.Store(store.span, substitute(access(split_var), inner), substitute(rets[0].value, inner))
    )

    needed = names_used(
        ast.Access(store.span, store.target.name, store.target.name_span, store.target.subscripts)
    )
    kept = []
    for s in reversed(pre):
        if isinstance(s, ast.Let) and s.name in needed:
            kept.insert(0, s)
            needed |= names_used(s.value)
    # The reducer's accumulator and split index get plain names that clash with nothing the
    # reducer sees: the partial's own name (`return acc`) or `acc`, and the split variable.
    returned = rets[0].value.id if isinstance(rets[0].value, ast.Name) else "acc"
    used = declared | _names(tuple(kept)) | names_used(store.target)
    acc_name = _fresh(returned, used)
    split_name = _fresh(red.var, used | {acc_name})
    acc, k = ast.Name(sp, acc_name), ast.Name(sp, split_name)
    reducer_body = [
        *kept,
        ast.Let(sp, acc_name, access(ast.IntLit(sp, 0))),
        ast.For(
            sp,
            split_name,
            "range",
            (ast.IntLit(sp, 1), count),
            (),
            (ast.Assign(sp, acc_name, binop("+", acc, access(k))),),
        ),
        ast.Store(store.span, store.target, acc),
    ]
    scratch = ast.TensorDecl(
        sp, "scratch", partials, decl.dtype, decl.dtype_span, (binop("*", count, d0), *decl.shape[1:]), False
    )
    producer = ast.TaskDef(
        task.span,
        splits,
        task.index,
        spmd=binop("*", grid, count),
        core=task.core,
        core_span=task.core_span,
        after=task.after,
        early_resolve=task.early_resolve,
        sync_start=task.sync_start,
        predicate=task.predicate,
        body=tuple(producer_body),
    )
    keyword = Span(sp.file, sp.line, sp.col, sp.line, sp.col + len("reduce_sum"))
    reducer = ast.TaskDef(
        red.span,
        task.name,
        task.index,
        spmd=task.spmd,
        after=(ast.TaskRef(red.span, (splits,), task.index),),
        body=tuple(reducer_body),
        reduction=ast.ReductionDecl(keyword, store.target.name, store.target.name_span, count, _chunks(red)),
    )
    return [scratch, producer, reducer]


def _declared(layer: ast.Layer) -> set[str]:
    """The names declared outside task bodies: parameters, constants, tensors, tasks, loops."""
    out = {p.name for p in layer.params}

    def stmts(body) -> None:
        for s in body:
            if isinstance(s, ast.TaskDef):
                out.add(s.name)
            elif isinstance(s, ast.LayerFor):
                out.add(s.var)
                stmts(s.body)
            elif isinstance(s, ast.LayerIf):
                stmts(s.then)
                stmts(s.orelse)
            else:
                out.update(_names(s))

    stmts(layer.body)
    return out


def _bound(stmts) -> set[str]:
    """The names ``let`` binds in ``stmts`` (at any depth)."""
    out: set[str] = set()

    def visit(n):
        if isinstance(n, ast.Let):
            out.add(n.name)
        return map_children(n, visit)

    for s in stmts:
        visit(s)
    return out


def _names(node) -> set[str]:
    """Every name ``node`` declares, binds or mentions (tensors, parameters, constants, tasks,
    locals, loop variables): a name outside this set cannot clash with the layer's."""
    out: set[str] = set()

    def visit(n):
        for attr in ("name", "id", "var"):
            value = getattr(n, attr, None)
            if isinstance(value, str):
                out.add(value)
        return map_children(n, visit)

    visit(node)
    return out


def _fresh(base: str, taken: set[str]) -> str:
    """``base``, or ``base2``, ``base3``, ... : the first not in ``taken``."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def _chunks(red: ast.ReduceSum) -> ast.Expr | None:
    """How many separately rounded chunk values each split folds, in ascending order, into its
    partial (the inner level of the tree; rule N203), or None when the body does not show it.

    ``return e`` of one value (not a sum) is one chunk. ``let v = c0`` (or ``zeros(...)``)
    followed by fold steps ``v = v + c`` (or ``v = matmul_acc(v, ...)`` without ``k_group``),
    written out or as the only update in one ``for ... in range(...)``, is one chunk per step
    plus one for a non-zero start. A ``matmul_acc`` chain with ``k_group`` continues one cube
    fold across its calls, so its chunk boundaries do not round: None.
    """
    sp = red.span
    ret = red.body[-1].value
    if not isinstance(ret, ast.Name):
        return None if _is_sum(ret) else ast.IntLit(sp, 1)
    v = ret.id
    starts = [i for i, s in enumerate(red.body[:-1]) if isinstance(s, ast.Let) and s.name == v]
    if len(starts) != 1 or _is_sum(red.body[starts[0]].value):
        return None
    count: ast.Expr = ast.IntLit(sp, 0 if _is_zero(red.body[starts[0]].value) else 1)
    for s in red.body[starts[0] + 1 : -1]:
        if isinstance(s, ast.Assign) and s.name == v:
            if not _fold_step(s.value, v):
                return None
            count = ast.Binary(sp, "+", count, ast.IntLit(sp, 1))
        elif isinstance(s, ast.For) and _assigns(s, v):
            steps = [b for b in s.body if isinstance(b, ast.Assign) and b.name == v]
            trips = _trip_count(s)
            nested = [b for b in s.body if b not in steps and _assigns(b, v)]
            if (
                s.kind != "range"
                or len(steps) != 1
                or nested
                or trips is None
                or not _fold_step(steps[0].value, v)
            ):
                return None
            count = ast.Binary(sp, "+", count, trips)
        elif _assigns(s, v):
            return None
    return count


def _is_sum(e) -> bool:
    return isinstance(e, ast.Binary) and e.op == "+"


def _is_zero(e) -> bool:
    return (isinstance(e, ast.Call) and e.func == "zeros") or (
        isinstance(e, ast.IntLit | ast.FloatLit) and e.value == 0
    )


def _fold_step(value, v: str) -> bool:
    """``v + chunk`` or ``matmul_acc(v, a, b)`` without ``k_group``, ``v`` used once."""
    if _is_sum(value) and isinstance(value.left, ast.Name) and value.left.id == v:
        return v not in names_used(value.right)
    if isinstance(value, ast.Call) and value.func == "matmul_acc" and value.args:
        first = value.args[0]
        rest = ast.Call(value.span, value.func, value.args[1:], value.kwargs)
        return (
            isinstance(first, ast.Name)
            and first.id == v
            and v not in names_used(rest)
            and all(k != "k_group" for k, _ in value.kwargs)
        )
    return False


def _assigns(node, v: str) -> bool:
    found = False

    def visit(n):
        nonlocal found
        if isinstance(n, ast.Assign | ast.Let) and n.name == v:
            found = True
        return map_children(n, visit)

    visit(node)
    return found


def _trip_count(loop: ast.For) -> ast.Expr | None:
    if len(loop.args) == 1:
        return loop.args[0]
    if len(loop.args) == 2:
        return ast.Binary(loop.span, "-", loop.args[1], loop.args[0])
    return None
