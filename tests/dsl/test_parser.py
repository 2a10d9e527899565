"""The parser, construct by construct: each test parses a small layer and asserts the fields
of the AST nodes it produces (names, kinds, operands, spans), not only that it parses.

Expressions are compared through ``sx``, a compact s-expression rendering of the AST:
``(+ a (* b 2))``, ``x[i, 0:n:2]``, ``zeros(f32, [16, D])``.
"""

from __future__ import annotations

import pytest

from dsl import ast
from dsl.parser import parse
from lowering.source import CompileError, Span


def sx(e) -> str:
    """A compact, span-free rendering of an expression AST."""
    if e is None:
        return ""
    if isinstance(e, ast.IntLit):
        return str(e.value)
    if isinstance(e, ast.FloatLit):
        return e.text
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Unary):
        return f"({e.op} {sx(e.operand)})"
    if isinstance(e, ast.Binary):
        return f"({e.op} {sx(e.left)} {sx(e.right)})"
    if isinstance(e, ast.Slice):
        text = f"{sx(e.start)}:{sx(e.stop)}"
        return text + (f":{sx(e.step)}" if e.step is not None else "")
    if isinstance(e, ast.Access):
        return f"{e.name}[{', '.join(sx(s) for s in e.subscripts)}]"
    if isinstance(e, ast.ListLit):
        return f"[{', '.join(sx(i) for i in e.items)}]"
    if isinstance(e, ast.Call):
        args = [sx(a) for a in e.args] + [f"{k}={sx(v)}" for k, v in e.kwargs]
        return f"{e.func}({', '.join(args)})"
    if isinstance(e, ast.TaskRef):
        return ".".join(e.path) + (f"[{sx(e.index)}]" if e.index is not None else "")
    if isinstance(e, ast.ReduceSum):
        return f"reduce_sum {e.var} in range({', '.join(sx(a) for a in e.args)}) {{{len(e.body)} stmts}}"
    raise TypeError(type(e).__name__)


def layer_of(text: str) -> ast.Layer:
    module = parse(text, "t.dsl")
    assert len(module.layers) == 1
    return module.layers[0]


def body_of(stmts: str) -> tuple:
    """The body statements of one task."""
    layer = layer_of("layer l() {\n  task t {\n" + stmts + "\n  }\n}\n")
    (task,) = layer.body
    return task.body


def expr_of(text: str):
    (let,) = body_of(f"    let v = {text}")
    assert isinstance(let, ast.Let)
    return let.value


# ---------------------------------------------------------------- module and layer header


def test_module_with_several_layers_and_comments():
    module = parse("# header\nlayer a() { }\n\nlayer b() { }  # trailing\n", "m.dsl")
    assert [layer.name for layer in module.layers] == ["a", "b"]
    assert module.layers[1].span == Span("m.dsl", 4, 1, 4, 14)


def test_empty_module_parses_to_no_layers():
    assert parse("", "e.dsl").layers == ()
    assert parse("# nothing here\n", "e.dsl").layers == ()


def test_parameters_with_defaults_and_trailing_comma():
    layer = layer_of("layer l(T = 128, D = 2 * 64,) { }")
    assert [(p.name, sx(p.default), p.domain) for p in layer.params] == [
        ("T", "128", None),
        ("D", "(* 2 64)", None),
    ]
    assert layer.params[1].span == Span("t.dsl", 1, 18, 1, 28)


def test_parameter_range_domain_with_step():
    (p,) = layer_of("layer l(T = 512 in 128..8192 step 128) { }").params
    assert (p.name, sx(p.default)) == ("T", "512")
    assert (sx(p.domain.lo), sx(p.domain.hi), sx(p.domain.step), p.domain.values) == (
        "128",
        "8192",
        "128",
        None,
    )


def test_parameter_range_domain_without_step():
    (p,) = layer_of("layer l(N = 4 in 1..N_MAX) { }").params
    assert (sx(p.domain.lo), sx(p.domain.hi), p.domain.step) == ("1", "N_MAX", None)


def test_parameter_set_domain():
    (p,) = layer_of("layer l(EP = 4 in {2, 4, 8, 16}) { }").params
    assert p.domain.lo is None
    assert [sx(v) for v in p.domain.values] == ["2", "4", "8", "16"]


# ---------------------------------------------------------------- layer statements


def test_const_definition():
    (c,) = layer_of("layer l(T = 4) {\n  const HALF = T / 2\n}").body
    assert isinstance(c, ast.ConstDef)
    assert (c.name, sx(c.value)) == ("HALF", "(/ T 2)")
    assert (c.span.line, c.span.col) == (2, 3)


def test_assert_with_and_without_message():
    a, b = layer_of('layer l(T = 4) {\n  assert T % 2 == 0, "T is even \\"really\\""\n  assert T > 0\n}').body
    assert isinstance(a, ast.AssertStmt) and isinstance(b, ast.AssertStmt)
    assert (sx(a.cond), a.message) == ("(== (% T 2) 0)", 'T is even "really"')
    assert (sx(b.cond), b.message) == ("(> T 0)", None)


def test_assert_message_keeps_non_ascii_text_next_to_escapes():
    (a,) = layer_of('layer l() { assert 1, "café\\tß" }').body
    assert a.message == "café\tß"


def test_scalar_declarations_with_and_without_range():
    a, b = layer_of("layer l() {\n  scalar epoch: i32\n  scalar n: i64 in 1..4096\n}").body
    assert (a.name, a.dtype, a.domain) == ("epoch", "i32", None)
    assert a.dtype_span == Span("t.dsl", 2, 17, 2, 20)
    assert (b.name, b.dtype, sx(b.domain.lo), sx(b.domain.hi)) == ("n", "i64", "1", "4096")


def test_derived_scalar_and_guard():
    d, g = layer_of('layer l() {\n  scalar s = a + b\n  guard s <= 8, "fits"\n}').body
    assert isinstance(d, ast.ScalarDef) and (d.name, sx(d.value)) == ("s", "(+ a b)")
    assert isinstance(g, ast.GuardStmt) and (sx(g.cond), g.message) == ("(<= s 8)", "fits")


def test_ranks_and_golden():
    r, g = layer_of('layer l(EP = 4) {\n  ranks EP\n  golden "ref.py"\n}').body
    assert isinstance(r, ast.RanksDecl) and sx(r.count) == "EP"
    assert isinstance(g, ast.GoldenDecl) and g.path == "ref.py"


def test_reduction_declaration_with_and_without_chunks():
    a, b = layer_of(
        "layer l(S = 4) {\n  reduction y: splits S, chunks 2 * S\n  reduction z: splits 3\n}"
    ).body
    assert isinstance(a, ast.ReductionDecl)
    assert (a.tensor, sx(a.splits), sx(a.chunks)) == ("y", "S", "(* 2 S)")
    assert a.tensor_span == Span("t.dsl", 2, 13, 2, 14)
    assert (b.tensor, sx(b.splits), b.chunks) == ("z", "3", None)


@pytest.mark.parametrize("direction", ["input", "output", "inout", "scratch", "window", "signal"])
def test_tensor_declaration_directions(direction: str):
    (t,) = layer_of(f"layer l(T = 4) {{ {direction} x: f32[T, 2 * T] }}").body
    assert isinstance(t, ast.TensorDecl)
    assert (t.direction, t.name, t.dtype, [sx(d) for d in t.shape], t.manual_dep) == (
        direction,
        "x",
        "f32",
        ["T", "(* 2 T)"],
        False,
    )
    assert t.dtype_span.col == len(f"layer l(T = 4) {{ {direction} x: ") + 1


def test_tensor_declaration_manual_dep():
    (t,) = layer_of("layer l() { input side: bf16[8] manual_dep }").body
    assert (t.direction, t.dtype, t.manual_dep) == ("input", "bf16", True)


def test_taskid_declaration():
    (t,) = layer_of("layer l() { taskid ready }").body
    assert isinstance(t, ast.TaskIdDecl) and t.name == "ready"


# ---------------------------------------------------------------- tasks


def test_plain_task():
    (t,) = layer_of("layer l() {\n  task move { }\n}").body
    assert isinstance(t, ast.TaskDef)
    assert (t.name, t.index, t.spmd, t.core, t.after, t.body) == ("move", None, None, None, (), ())
    assert (t.early_resolve, t.sync_start, t.manual, t.predicate) == (False, False, False, None)
    assert t.span == Span("t.dsl", 2, 3, 2, 16)


def test_task_with_every_attribute():
    src = (
        "layer l() {\n  task mm[e + 1] spmd(T / 16) on aic after a, b[2], call.push"
        " early_resolve sync_start manual when f[e, 0] > 0 { }\n}"
    )
    (t,) = layer_of(src).body
    assert (t.name, sx(t.index), sx(t.spmd), t.core) == ("mm", "(+ e 1)", "(/ T 16)", "aic")
    assert t.core_span == Span("t.dsl", 2, 34, 2, 37)
    assert [sx(r) for r in t.after] == ["a", "b[2]", "call.push"]
    assert (t.early_resolve, t.sync_start, t.manual) == (True, True, True)
    assert sx(t.predicate) == "(> f[e, 0] 0)"


def test_repeated_after_clauses_accumulate():
    (t,) = layer_of("layer l() { task t after a after b, c { } }").body
    assert [sx(r) for r in t.after] == ["a", "b", "c"]


def test_task_ref_spans_point_at_the_reference():
    (t,) = layer_of("layer l() { task t after first, arr[3] { } }").body
    assert [(r.span.col, r.span.end_col) for r in t.after] == [(26, 31), (33, 39)]


# ---------------------------------------------------------------- layer loops, ifs and calls


@pytest.mark.parametrize(("kind", "args"), [("range", "N"), ("range", "1, N, 2"), ("parallel", "E")])
def test_layer_for(kind: str, args: str):
    (f,) = layer_of(f"layer l() {{ for e in {kind}({args}) {{ task mm[e] {{ }} }} }}").body
    assert isinstance(f, ast.LayerFor)
    assert (f.var, f.kind, ", ".join(sx(a) for a in f.args)) == ("e", kind, args)
    (task,) = f.body
    assert (task.name, sx(task.index)) == ("mm", "e")


def test_layer_if_with_else():
    (i,) = layer_of("layer l() { if EP > 2 { task big { } } else { task small { } const C = 1 } }").body
    assert isinstance(i, ast.LayerIf)
    assert sx(i.cond) == "(> EP 2)"
    assert [s.name for s in i.then] == ["big"]
    assert [type(s).__name__ for s in i.orelse] == ["TaskDef", "ConstDef"]


def test_layer_if_without_else():
    (i,) = layer_of("layer l() { if 1 { } }").body
    assert (i.then, i.orelse) == ((), ())


def test_layer_call_bindings():
    (c,) = layer_of(
        "layer l() {\n  call sub = inner(N = 4 * 2, a = x, dep = first, other = d.push[1])\n}"
    ).body
    assert isinstance(c, ast.LayerCall)
    assert (c.alias, c.layer) == ("sub", "inner")
    assert c.layer_span == Span("t.dsl", 2, 14, 2, 19)
    assert [(name, sx(value)) for name, value, _ in c.bindings] == [
        ("N", "(* 4 2)"),
        ("a", "x"),
        ("dep", "first"),
        ("other", "d.push[1]"),
    ]
    assert isinstance(c.bindings[3][1], ast.TaskRef)
    assert [span.col for _, _, span in c.bindings] == [20, 31, 38, 51]


def test_layer_call_without_bindings():
    (c,) = layer_of("layer l() { call s = inner() }").body
    assert c.bindings == ()


# ---------------------------------------------------------------- body statements


def test_let_and_reassignment():
    let, assign = body_of("    let acc = zeros(f32, [16, MIX])\n    acc = acc + 1.0")
    assert isinstance(let, ast.Let) and (let.name, sx(let.value)) == ("acc", "zeros(f32, [16, MIX])")
    assert isinstance(assign, ast.Assign) and (assign.name, sx(assign.value)) == ("acc", "(+ acc 1.0)")
    assert (assign.span.line, assign.span.col) == (4, 5)


def test_store_with_slices_of_every_shape():
    (s,) = body_of("    y[t0 : t0 + 16, :, 2:, :n, ::2, a:b:s, i] = v")
    assert isinstance(s, ast.Store)
    assert sx(s.target) == "y[t0:(+ t0 16), :, 2:, :n, ::2, a:b:s, i]"
    assert [type(x).__name__ for x in s.target.subscripts] == ["Slice"] * 6 + ["Name"]
    assert s.target.name_span == Span("t.dsl", 3, 5, 3, 6)


def test_plain_and_atomic_accumulation():
    plain, atomic = body_of("    y[0:16, :] += v\n    y[0:16, :] += acc atomic")
    assert isinstance(plain, ast.Accumulate) and (plain.atomic, sx(plain.value)) == (False, "v")
    assert isinstance(atomic, ast.Accumulate) and (atomic.atomic, sx(atomic.value)) == (True, "acc")


@pytest.mark.parametrize(
    ("header", "kind", "args", "kwargs"),
    [
        ("for k in range(4)", "range", ["4"], []),
        ("for k in range(1, N, 2)", "range", ["1", "N", "2"], []),
        ("for k in parallel(E)", "parallel", ["E"], []),
        ("for k in pipeline(0, 8, stages=2)", "pipeline", ["0", "8"], [("stages", "2")]),
    ],
)
def test_body_for_loops(header, kind, args, kwargs):
    (f,) = body_of(f"    {header} {{ let x = k }}")
    assert isinstance(f, ast.For)
    assert (f.var, f.kind, [sx(a) for a in f.args]) == ("k", kind, args)
    assert [(k, sx(v)) for k, v in f.kwargs] == kwargs
    assert [type(s).__name__ for s in f.body] == ["Let"]


def test_if_else_if_else_chain():
    (i,) = body_of("    if a == 0 { let x = 1 } else if a == 1 { let y = 2 } else { let z = 3 }")
    assert isinstance(i, ast.If) and sx(i.cond) == "(== a 0)"
    assert [s.name for s in i.then] == ["x"]
    (inner,) = i.orelse
    assert isinstance(inner, ast.If) and sx(inner.cond) == "(== a 1)"
    assert [s.name for s in inner.then] == ["y"]
    assert [s.name for s in inner.orelse] == ["z"]


def test_if_without_else():
    (i,) = body_of("    if block < n { }")
    assert (i.then, i.orelse) == ((), ())


def test_remote_store_plain_and_atomic():
    a, b = body_of(
        "    remote_store w[r * T : r * T + 1, :] @ dst = x[t, :]\n    remote_store w[0, 0] @ 1 += v"
    )
    assert isinstance(a, ast.RemoteStore)
    assert (sx(a.target), sx(a.peer), sx(a.value), a.atomic) == (
        "w[(* r T):(+ (* r T) 1), :]",
        "dst",
        "x[t, :]",
        False,
    )
    assert (sx(b.target), sx(b.peer), b.atomic) == ("w[0, 0]", "1", True)


def test_notify_add_and_set():
    add, put = body_of("    notify sig[rank] @ dst += 1\n    notify sig[0] @ (rank + 1) % nranks = epoch")
    assert isinstance(add, ast.Notify)
    assert (sx(add.cell), sx(add.peer), add.op, sx(add.value)) == ("sig[rank]", "dst", "add", "1")
    assert (sx(put.cell), sx(put.peer), put.op, sx(put.value)) == (
        "sig[0]",
        "(% (+ rank 1) nranks)",
        "set",
        "epoch",
    )


def test_wait_ge_and_eq():
    ge, eq = body_of("    wait sig[src] >= epoch * N\n    wait sig[0] == 0")
    assert isinstance(ge, ast.Wait)
    assert (sx(ge.cell), ge.cmp, sx(ge.expected)) == ("sig[src]", "ge", "(* epoch N)")
    assert (sx(eq.cell), eq.cmp, sx(eq.expected)) == ("sig[0]", "eq", "0")


def test_barrier_hard_and_soft():
    hard, soft = body_of("    barrier\n    barrier soft")
    assert isinstance(hard, ast.Barrier) and hard.soft is False
    assert isinstance(soft, ast.Barrier) and soft.soft is True


def test_anchor_read_statement():
    (s,) = body_of("    read(indices[0, 0])")
    assert isinstance(s, ast.ExprStmt) and sx(s.call) == "read(indices[0, 0])"


def test_statements_may_share_a_line():
    a, b, c = body_of("    let a = 1 let b = 2 y[0] = a")
    assert [type(s).__name__ for s in (a, b, c)] == ["Let", "Let", "Store"]
    assert [s.span.col for s in (a, b, c)] == [5, 15, 25]


def test_reduce_sum_and_return():
    (store,) = body_of("    y[0:16, :] = reduce_sum s in range(S) { let k0 = s * 4\n return matmul(a, b) }")
    red = store.value
    assert isinstance(red, ast.ReduceSum)
    assert (red.var, [sx(a) for a in red.args]) == ("s", ["S"])
    let, ret = red.body
    assert isinstance(let, ast.Let) and isinstance(ret, ast.Return)
    assert sx(ret.value) == "matmul(a, b)"


# ---------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a + b * c", "(+ a (* b c))"),
        ("(a + b) * c", "(* (+ a b) c)"),
        ("a - b - c", "(- (- a b) c)"),
        ("a / b // c % d", "(% (// (/ a b) c) d)"),
        ("-a * b", "(* (- a) b)"),
        ("- - a", "(- (- a))"),
        ("a < b + 1", "(< a (+ b 1))"),
        ("a == b and c != d or not e", "(or (and (== a b) (!= c d)) (not e))"),
        ("a <= b and b >= c and c > d", "(and (and (<= a b) (>= b c)) (> c d))"),
        ("not not a", "(not (not a))"),
        ("min(a, b) + max(1, 2) * cdiv(N, 16)", "(+ min(a, b) (* max(1, 2) cdiv(N, 16)))"),
    ],
)
def test_operator_precedence(text: str, tree: str):
    assert sx(expr_of(text)) == tree


@pytest.mark.parametrize(
    ("text", "cls", "value"),
    [
        ("42", ast.IntLit, 42),
        ("0x2A", ast.IntLit, 42),
        ("1.5", ast.FloatLit, 1.5),
        ("2.0e-3", ast.FloatLit, 0.002),
        ("1e9", ast.FloatLit, 1e9),
        ("inf", ast.FloatLit, float("inf")),
        ("true", ast.BoolLit, True),
        ("false", ast.BoolLit, False),
    ],
)
def test_literals(text: str, cls, value):
    e = expr_of(text)
    assert isinstance(e, cls) and e.value == value


def test_float_literal_keeps_its_text():
    e = expr_of("2.50")
    assert (e.value, e.text) == (2.5, "2.50")


def test_calls_with_flags_keyword_options_and_lists():
    e = expr_of("matmul_acc(acc, x[t0 : t0 + 16, :], w[:, k0 : k0 + K], b_trans, k_group=4)")
    assert isinstance(e, ast.Call)
    assert e.func == "matmul_acc"
    assert [sx(a) for a in e.args] == ["acc", "x[t0:(+ t0 16), :]", "w[:, k0:(+ k0 K)]", "b_trans"]
    assert [(k, sx(v)) for k, v in e.kwargs] == [("k_group", "4")]
    assert sx(expr_of("zeros(f32, [])")) == "zeros(f32, [])"


def test_call_without_arguments():
    e = expr_of("f()")
    assert isinstance(e, ast.Call) and (e.func, e.args, e.kwargs) == ("f", (), ())


def test_binary_spans_cover_both_operands():
    e = expr_of("a + bb * c")
    assert (e.span.col, e.span.end_col) == (13, 23)
    assert (e.right.span.col, e.right.span.end_col) == (17, 23)


def test_comparisons_do_not_chain():
    with pytest.raises(CompileError) as err:
        expr_of("a < b < c")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line, d.span.col) == ("E101", 3, 19)
