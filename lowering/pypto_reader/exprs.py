"""Python expressions -> abstract values, shared by the module, orchestration and kernel readers.

Integers become symbolic expressions (``IntVal``); ``pl.min``/``pl.max`` and the builtins
``min``/``max`` become ``min``/``max`` nodes, so a valid extent such as
``pl.min(TOPK_CAP, visible)`` keeps its bound for the sort and capacity rules. ``-(-a // b)``
is recognised as ``cdiv``. Anything else that is static (strings, floats, bools) is folded
in Python; what cannot be evaluated is :class:`~lowering.pypto_reader.values.Unknown`.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.values import (
    UNKNOWN,
    ArgsVal,
    DtypeVal,
    IntVal,
    ModuleVal,
    PlRef,
    PyVal,
    SeqVal,
    TensorVal,
    Unknown,
    Val,
)
from lowering.symbolic import Bin, Const, EvalError, Expr, Sym, binop, evaluate

DTYPES = {
    "FP32": "f32",
    "FP16": "f16",
    "BF16": "bf16",
    "INT8": "i8",
    "UINT8": "u8",
    "INT16": "i16",
    "UINT16": "i16",
    "INT32": "i32",
    "UINT32": "u32",
    "INT64": "i64",
    "UINT64": "i64",
    "INDEX": "i64",
    "BOOL": "bool",
    "TASK_ID": "i64",
}

_ARITH = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Div: "//",  # integer code in PyPTO files divides exactly; the DSL reads `/` the same way
    ast.Mod: "%",
}
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_PY_BIN: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_PY_CMP: dict[type, Callable] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` as text, or None when the chain is not plain names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class Evaluator:
    """Evaluates expressions; subclasses provide names (``lookup``) and calls (``call_*``)."""

    def __init__(self, file: str, notes: Notes, env: Callable[[], dict[str, int]]):
        self.file = file
        self.notes = notes
        self._env = env  # values of module constants (params and consts) at this point

    # ---------------------------------------------------------------- hooks
    def lookup(self, name: str, node: ast.AST) -> Val:
        return Unknown(f"unknown name '{name}'")

    def call_pl(self, path: str, node: ast.Call) -> Val:
        """A call to ``pl.*``/``pld.*`` (canonical ``path``)."""
        return self.scalar_pl(path, node)

    def call_other(self, func: Val, node: ast.Call) -> Val:
        return UNKNOWN

    # ---------------------------------------------------------------- helpers
    def span(self, node: ast.AST | None):
        return span_of(self.file, node)

    def env(self) -> dict[str, int]:
        return self._env()

    def value_of(self, expr: Expr, extra: dict[str, int] | None = None) -> int | None:
        """The integer value of ``expr`` at this parameter point (None if it depends on more)."""
        if isinstance(expr, Const):
            return expr.value
        try:
            env = self.env()
            if extra:
                env = {**env, **extra}
            return evaluate(expr, env)
        except EvalError:
            return None

    def int_expr(self, v: Val) -> Expr | None:
        if isinstance(v, IntVal):
            return v.expr
        if isinstance(v, PyVal) and isinstance(v.value, bool | int):
            return Const(int(v.value))
        return None

    def int_seq(self, node: ast.expr | None) -> tuple[Expr, ...] | None:
        """A shape or offsets list (``[a, b]``, a tuple, a ``.shape``) whose items are all
        integers; None when absent or not of that form."""
        return self.int_items(self.eval(node)) if node is not None else None

    def int_items(self, v: Val) -> tuple[Expr, ...] | None:
        """The items of a sequence value as integers, when all of them are."""
        if not isinstance(v, SeqVal):
            return None
        out = [self.int_expr(i) for i in v.items]
        return tuple(out) if all(o is not None for o in out) else None  # type: ignore[arg-type]

    def dtype_named(self, node: ast.expr | None, default: str) -> str:
        """The IR dtype a ``dtype=`` argument names (``pl.FP32`` -> ``f32``), else ``default``."""
        d = self.eval(node) if node is not None else None
        return d.dtype if isinstance(d, DtypeVal) and d.dtype else default

    def static(self, v: Val) -> object:
        """A plain Python value for ``v`` when it is fully known, else the UNKNOWN sentinel."""
        if isinstance(v, PyVal):
            return v.value
        if isinstance(v, IntVal):
            value = self.value_of(v.expr)
            return UNKNOWN if value is None else value
        if isinstance(v, SeqVal):
            items = [self.static(i) for i in v.items]
            return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
        return UNKNOWN

    # ---------------------------------------------------------------- evaluation
    def eval(self, node: ast.expr) -> Val:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            return Unknown(f"{type(node).__name__} expression")
        return method(node)

    def e_Constant(self, node: ast.Constant) -> Val:
        v = node.value
        if isinstance(v, int) and not isinstance(v, bool):
            return IntVal(Const(v))
        return PyVal(v)

    def e_Name(self, node: ast.Name) -> Val:
        return self.lookup(node.id, node)

    def e_Attribute(self, node: ast.Attribute) -> Val:
        base = self.eval(node.value)
        return self.attribute(base, node.attr, node)

    def attribute(self, base: Val, attr: str, node: ast.AST) -> Val:
        if isinstance(base, PlRef):
            path = f"{base.path}.{attr}"
            if base.path in ("pl", "pl.tile", "pl.tensor") and attr in DTYPES:
                return DtypeVal(attr, DTYPES[attr])
            if base.path in ("pl", "pl.tile", "pl.tensor") and attr.startswith(("FP", "HF")):
                return DtypeVal(attr, None)
            return PlRef(path)
        if isinstance(base, ArgsVal):
            return self.argv_default(attr, node)
        if isinstance(base, ModuleVal):
            return base.module.globals.get(attr, Unknown(f"'{attr}' of module {base.module.name}"))
        if isinstance(base, PyVal) and isinstance(base.value, tuple) and base.value[:1] == ("module",):
            return PyVal(("module", f"{base.value[1]}.{attr}"))
        if isinstance(base, TensorVal) and attr == "shape":
            return self.tensor_shape(base)
        return Unknown(f"attribute '{attr}'")

    def argv_default(self, attr: str, node: ast.AST) -> Val:
        return Unknown(f"argv option '{attr}'")

    def tensor_shape(self, t: TensorVal) -> Val:
        return Unknown("tensor shape")

    def e_Tuple(self, node: ast.Tuple) -> Val:
        return SeqVal(tuple(self.eval(e) for e in node.elts))

    e_List = e_Tuple

    def e_UnaryOp(self, node: ast.UnaryOp) -> Val:
        v = self.eval(node.operand)
        i = self.int_expr(v)
        if isinstance(node.op, ast.USub):
            # -(-a // b) is the ceiling division idiom
            if (
                isinstance(node.operand, ast.BinOp)
                and isinstance(node.operand.op, ast.FloorDiv)
                and isinstance(node.operand.left, ast.UnaryOp)
                and isinstance(node.operand.left.op, ast.USub)
            ):
                a = self.int_expr(self.eval(node.operand.left.operand))
                b = self.int_expr(self.eval(node.operand.right))
                if a is not None and b is not None:
                    return IntVal(binop("cdiv", a, b))
            if i is not None:
                return IntVal(binop("-", Const(0), i))
            if isinstance(v, PyVal) and isinstance(v.value, int | float):
                return PyVal(-v.value)
            return self.negate(v, node)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            if i is not None:
                return IntVal(binop("==", i, Const(0)))
            s = self.static(v)
            return UNKNOWN if s is UNKNOWN else PyVal(not s)
        s = self.static(v)
        if isinstance(node.op, ast.Invert) and isinstance(s, int):
            return IntVal(Const(~s))
        return UNKNOWN

    def negate(self, v: Val, node: ast.AST) -> Val:
        return UNKNOWN

    def e_BinOp(self, node: ast.BinOp) -> Val:
        a, b = self.eval(node.left), self.eval(node.right)
        return self.binary(node.op, a, b, node)

    def binary(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        ia, ib = self.int_expr(a), self.int_expr(b)
        if ia is not None and ib is not None and type(op) in _ARITH:
            if isinstance(op, ast.Div) and isinstance(ia, Const) and isinstance(ib, Const):
                if ib.value and ia.value % ib.value:
                    return PyVal(ia.value / ib.value)
            return IntVal(binop(_ARITH[type(op)], ia, ib))
        if ia is not None and ib is not None and isinstance(ia, Const) and isinstance(ib, Const):
            fn = _PY_BIN.get(type(op))
            if fn is not None:
                try:
                    return IntVal(Const(int(fn(ia.value, ib.value))))
                except (ArithmeticError, ValueError, OverflowError):
                    return UNKNOWN
        sa, sb = self.static(a), self.static(b)
        if sa is not UNKNOWN and sb is not UNKNOWN and isinstance(a, PyVal | IntVal | SeqVal):
            fn = _PY_BIN.get(type(op))
            try:
                if fn is not None and isinstance(b, PyVal | IntVal | SeqVal):
                    return _py(fn(sa, sb))
            except Exception:  # noqa: BLE001 - a static fold that Python itself rejects
                return UNKNOWN
        return self.binary_other(op, a, b, node)

    def binary_other(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        return UNKNOWN

    def e_BoolOp(self, node: ast.BoolOp) -> Val:
        vals = [self.eval(v) for v in node.values]
        name = "and" if isinstance(node.op, ast.And) else "or"
        folded = self.fold_ints(name, vals)
        if folded is not None:
            return folded
        statics = [self.static(v) for v in vals]
        if all(s is not UNKNOWN for s in statics):
            result = statics[0]
            for s in statics[1:]:
                result = (result and s) if name == "and" else (result or s)
            return _py(result)
        return UNKNOWN

    def e_Compare(self, node: ast.Compare) -> Val:
        left = self.eval(node.left)
        out: Val | None = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node)
            one = self.compare(op, left, right, node)
            if out is None:
                out = one
            else:
                ia, ib = self.int_expr(out), self.int_expr(one)
                if ia is not None and ib is not None:
                    out = IntVal(binop("and", ia, ib))
                else:
                    sa, sb = self.static(out), self.static(one)
                    out = UNKNOWN if UNKNOWN in (sa, sb) else PyVal(bool(sa and sb))
            left = right
        return out if out is not None else UNKNOWN

    def compare(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
        ia, ib = self.int_expr(a), self.int_expr(b)
        if ia is not None and ib is not None and type(op) in _CMP:
            return IntVal(binop(_CMP[type(op)], ia, ib))
        sa, sb = self.static(a), self.static(b)
        if sa is not UNKNOWN and sb is not UNKNOWN:
            try:
                return PyVal(bool(_PY_CMP[type(op)](sa, sb)))
            except Exception:  # noqa: BLE001 - e.g. comparing str with int
                return UNKNOWN
        if isinstance(op, ast.Is | ast.IsNot) and isinstance(b, PyVal) and b.value is None:
            is_none = isinstance(a, PyVal) and a.value is None
            known = not isinstance(a, Unknown)
            if known:
                return PyVal(is_none if isinstance(op, ast.Is) else not is_none)
        return self.compare_other(op, a, b, node)

    def compare_other(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
        return UNKNOWN

    def e_IfExp(self, node: ast.IfExp) -> Val:
        cond = self.eval(node.test)
        truth = self.truth(cond)
        if truth is None:
            a, b = self.eval(node.body), self.eval(node.orelse)
            ia, ib, ic = self.int_expr(a), self.int_expr(b), self.int_expr(cond)
            if ia is not None and ib is not None and ic is not None and ia == ib:
                return a
            return UNKNOWN
        return self.eval(node.body if truth else node.orelse)

    def truth(self, v: Val) -> bool | None:
        s = self.static(v)
        if s is UNKNOWN:
            return None
        return bool(s)

    def e_Subscript(self, node: ast.Subscript) -> Val:
        base = self.eval(node.value)
        if isinstance(base, SeqVal):
            idx = self.static(self.eval(node.slice))
            if isinstance(idx, int):
                try:
                    return base.items[idx]
                except IndexError:
                    return UNKNOWN
        if isinstance(base, PyVal) and isinstance(base.value, str | tuple | list | dict):
            idx = self.static(self.eval(node.slice))
            try:
                return _py(base.value[idx])  # type: ignore[index]
            except Exception:  # noqa: BLE001 - static indexing that fails in Python too
                return UNKNOWN
        return self.subscript(base, node)

    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        return UNKNOWN

    def e_Call(self, node: ast.Call) -> Val:
        func = self.eval(node.func)
        if isinstance(func, PlRef):
            return self.call_pl(func.path, node)
        name = dotted(node.func)
        if name in ("min", "max") and len(node.args) >= 2 and not node.keywords:
            return self.minmax(name, [self.eval(a) for a in node.args])
        if name in ("int", "abs", "bool", "float", "str", "len", "round") and len(node.args) == 1:
            return self.builtin(name, self.eval(node.args[0]))
        if name in ("math.ceil", "math.floor") and len(node.args) == 1:
            s = self.static(self.eval(node.args[0]))
            if isinstance(s, int | float):
                return IntVal(Const(int(math.ceil(s) if name == "math.ceil" else math.floor(s))))
        if name in ("os.environ.get", "os.getenv"):
            return self.environ(node)
        return self.call_other(func, node)

    def fold_ints(self, op: str, args: list[Val]) -> IntVal | None:
        """``((a op b) op c) ...`` as one symbolic integer, when every argument is an integer."""
        ints = [self.int_expr(a) for a in args]
        if not all(i is not None for i in ints):
            return None
        out = ints[0]
        for i in ints[1:]:
            out = binop(op, out, i)  # type: ignore[arg-type]
        return IntVal(out)  # type: ignore[arg-type]

    def minmax(self, name: str, args: list[Val]) -> Val:
        folded = self.fold_ints(name, args)
        if folded is not None:
            return folded
        statics = [self.static(a) for a in args]
        if all(s is not UNKNOWN for s in statics):
            return _py(min(statics) if name == "min" else max(statics))  # type: ignore[type-var]
        return UNKNOWN

    def builtin(self, name: str, v: Val) -> Val:
        i = self.int_expr(v)
        if name == "int" and i is not None:
            return IntVal(i)
        s = self.static(v)
        if s is UNKNOWN:
            return UNKNOWN
        try:
            result = {
                "int": int,
                "abs": abs,
                "bool": bool,
                "float": float,
                "str": str,
                "len": len,
                "round": round,
            }[name](s)  # type: ignore[operator]
        except Exception:  # noqa: BLE001 - e.g. int("x")
            return UNKNOWN
        return _py(result)

    def environ(self, node: ast.Call) -> Val:
        """``os.environ.get(NAME, DEFAULT)``: the reader assumes the default."""
        if len(node.args) >= 2:
            return self.eval(node.args[1])
        for kw in node.keywords:
            if kw.arg == "default":
                return self.eval(kw.value)
        return PyVal(None)

    def scalar_pl(self, path: str, node: ast.Call) -> Val:
        """``pl.min``/``pl.max`` on scalars; other ``pl`` calls are unknown here."""
        short = path.rsplit(".", 1)[-1]
        if short in ("min", "max") and len(node.args) == 2:
            return self.minmax(short, [self.eval(a) for a in node.args])
        if path == "pl.dynamic":
            name = self.static(self.eval(node.args[0])) if node.args else None
            return IntVal(Sym(str(name or "dyn"), "scalar"))  # a runtime extent, like a scalar
        return UNKNOWN

    # ---------------------------------------------------------------- arguments
    def arguments(self, node: ast.Call, names: list[str]) -> dict[str, ast.expr]:
        """Bind a call's positional and keyword arguments to parameter ``names`` (ast nodes)."""
        out: dict[str, ast.expr] = {}
        for name, arg in zip(names, node.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            out[name] = arg
        for kw in node.keywords:
            if kw.arg is not None:
                out[kw.arg] = kw.value
        return out


def _py(value: object) -> Val:
    if isinstance(value, bool) or value is None:
        return PyVal(value)
    if isinstance(value, int):
        return IntVal(Const(value))
    if isinstance(value, tuple | list):
        return SeqVal(tuple(_py(v) for v in value))
    return PyVal(value)


def is_const_expr(expr: Expr) -> bool:
    """True when ``expr`` has no free symbol of a runtime kind (only constants and parameters)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Sym) and e.kind not in ("param", "const"):
            return False
        if isinstance(e, Bin):
            stack.extend((e.a, e.b))
    return True
