"""Host-side request guards: ``build_tensor_specs`` refusing requests, and runtime-scalar ranges.

pypto-lib model files check a request before compiling and running it, in the host code that
builds the tensor specs (docs/runtime-semantics.md §13.3, §19): ``if not 1 <= num_tokens <= T:
raise ...``. The reader takes, from the function named ``build_tensor_specs``,

- a check of one runtime scalar against constant bounds (``lo <= x <= hi``, ``x in (...)``) as
  that scalar's admissible range (the DSL's ``scalar x: i32 in lo..hi``);
- any other ``if <cond>: raise`` as a guard the host applies (the DSL's ``guard``), with the
  local values it uses (``seq_len = start_pos + num_tokens``) as derived scalars.

Its parameters are the entry's runtime scalars of the same names.
"""

from __future__ import annotations

import ast

from lowering import parameters
from lowering.pypto_reader.constants import last_in_range
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.modules import ModuleInfo
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.values import FuncVal, IntVal, PyVal, Unknown, Val
from lowering.symbolic import SCALAR, Bin, Const, Expr, Sym, binop, free_symbols

SPEC_FUNCTIONS = ("build_tensor_specs",)


class _GuardEval(Evaluator):
    def __init__(self, module: ModuleInfo, notes: Notes, env, local: dict[str, Val]):
        super().__init__(module.file, notes, env)
        self.module = module
        self.local = local

    def lookup(self, name: str, node: ast.AST) -> Val:
        if name in self.local:
            return self.local[name]
        return self.module.globals.get(name, Unknown(name))


def read_guards(
    module: ModuleInfo, notes: Notes, env
) -> tuple[list, dict[str, parameters.Scalar], dict[str, parameters.Domain]]:
    """(guards, derived scalars, scalar domains) from the module's ``build_tensor_specs``."""
    func = next(
        (v for k, v in module.globals.items() if k in SPEC_FUNCTIONS and isinstance(v, FuncVal)),
        None,
    )
    if func is None:
        return [], {}, {}
    local: dict[str, Val] = {}
    for p in func.node.args.args:
        local[p.arg] = IntVal(Sym(p.arg, SCALAR))
    ev = _GuardEval(module, notes, env, local)
    guards: list = []
    derived: dict[str, parameters.Scalar] = {}
    domains: dict[str, parameters.Domain] = {}
    names_of: dict[str, Expr] = {}
    for stmt in ast.walk(ast.Module(body=func.node.body, type_ignores=[])):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = ev.eval(stmt.value)
            if isinstance(v, IntVal) and any(s.kind == SCALAR for s in free_symbols(v.expr)):
                name = stmt.targets[0].id
                local[name] = v
                names_of[name] = v.expr
                refs = tuple(
                    dict.fromkeys(
                        n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in local
                    )
                )
                derived[name] = parameters.Scalar(name, "i32", None, span_of(module.file, stmt), v.expr, refs)
        elif (
            isinstance(stmt, ast.If)
            and len(stmt.body) == 1
            and isinstance(stmt.body[0], ast.Raise)
            and not stmt.orelse
        ):
            _guard(stmt, ev, local, guards, domains, module)
    return guards, derived, domains


def _message(stmt: ast.If, ev: Evaluator) -> str | None:
    exc = stmt.body[0].exc  # type: ignore[attr-defined]
    if isinstance(exc, ast.Call) and exc.args:
        v = ev.eval(exc.args[0])
        if isinstance(v, PyVal) and isinstance(v.value, str):
            return v.value
        if isinstance(exc.args[0], ast.JoinedStr):
            return "".join(p.value for p in exc.args[0].values if isinstance(p, ast.Constant))
    return None


def _guard(stmt: ast.If, ev: Evaluator, local, guards, domains, module: ModuleInfo) -> None:
    test = stmt.test
    accept = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else None
    dom = _domain(accept, test, ev)
    if dom is not None:
        name, domain = dom
        domains[name] = domain
        return
    v = ev.eval(test)
    if not isinstance(v, IntVal):
        return
    if accept is not None:
        a = ev.eval(accept)
        cond = a.expr if isinstance(a, IntVal) else negate(v.expr)
        text = ast.unparse(accept)
    else:
        cond = negate(v.expr)
        text = _negated_text(test)
    names = tuple(
        dict.fromkeys(n.id for n in ast.walk(accept or test) if isinstance(n, ast.Name) and n.id in local)
    )
    guards.append(parameters.Guard(cond, _message(stmt, ev), text, names, span_of(module.file, stmt)))


def _domain(accept: ast.expr | None, test: ast.expr, ev: Evaluator) -> tuple[str, parameters.Domain] | None:
    """``not lo <= x <= hi`` / ``x not in (...)`` on a parameter of the function."""
    if (
        accept is not None
        and isinstance(accept, ast.Compare)
        and len(accept.ops) == 2
        and all(isinstance(o, ast.LtE | ast.Lt) for o in accept.ops)
        and isinstance(accept.comparators[0], ast.Name)
    ):
        x = ev.eval(accept.comparators[0])
        if not (isinstance(x, IntVal) and isinstance(x.expr, Sym) and x.expr.kind == SCALAR):
            return None
        lo, hi = ev.static(ev.eval(accept.left)), ev.static(ev.eval(accept.comparators[1]))
        if isinstance(lo, int) and isinstance(hi, int):
            lo += 0 if isinstance(accept.ops[0], ast.LtE) else 1
            hi -= 0 if isinstance(accept.ops[1], ast.LtE) else 1
            if hi >= lo:
                return x.expr.name, parameters.Domain(lo, hi, 1)
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.NotIn)
        and isinstance(test.left, ast.Name)
    ):
        x = ev.eval(test.left)
        right = test.comparators[0]
        values = ev.static(ev.eval(right))
        if isinstance(right, ast.Call) and isinstance(right.func, ast.Name) and right.func.id == "range":
            args = [ev.static(ev.eval(a)) for a in right.args]
            if len(args) in (2, 3) and all(isinstance(a, int) for a in args):
                step = args[2] if len(args) == 3 else 1
                if isinstance(x, IntVal) and isinstance(x.expr, Sym) and x.expr.kind == SCALAR and step > 0:
                    return x.expr.name, parameters.Domain(
                        args[0], last_in_range(args[0], args[1], step), step
                    )
        if (
            isinstance(x, IntVal)
            and isinstance(x.expr, Sym)
            and x.expr.kind == SCALAR
            and isinstance(values, tuple)
            and values
            and all(isinstance(v, int) for v in values)
        ):
            return x.expr.name, parameters.Domain(values=tuple(sorted(set(values))))
    return None


_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_AST_FLIP = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


def negate(e: Expr) -> Expr:
    """``not e`` as a comparison where possible (``a > b`` -> ``a <= b``), by De Morgan for and/or."""
    if isinstance(e, Bin) and e.op in _FLIP:
        return Bin(_FLIP[e.op], e.a, e.b)
    if isinstance(e, Bin) and e.op in ("and", "or"):
        return Bin("or" if e.op == "and" else "and", negate(e.a), negate(e.b))
    return binop("==", e, Const(0))


def _negated_text(test: ast.expr) -> str:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _AST_FLIP:
        flipped = ast.Compare(test.left, [_AST_FLIP[type(test.ops[0])]()], test.comparators)
        return ast.unparse(flipped)
    return f"not ({ast.unparse(test)})"
