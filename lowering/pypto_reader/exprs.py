"""Python expressions -> abstract values, shared by every interpreter of the reader.

The :class:`Evaluator` gives Python's own semantics to what module-level code, host helpers,
orchestration code and kernel bodies compute, on the values of
:mod:`~lowering.pypto_reader.values`, without running anything:

- integers stay symbolic (``IntVal``): arithmetic builds ``lowering.symbolic`` expressions so
  grids and regions remain functions of the parameters; ``pl.min``/``pl.max`` and the
  builtins ``min``/``max`` become ``min``/``max`` nodes (a valid extent such as
  ``pl.min(TOPK_CAP, visible)`` keeps its bound for the sort and capacity rules) and
  ``-(-a // b)`` is ``cdiv``;
- strings, floats, tuples, lists, dicts, ranges, comprehensions, f-strings, lambdas and
  attribute access on instances, classes and modules of the file fold as in Python; builtins
  and the standard-library functions configuration code uses come from
  :mod:`~lowering.pypto_reader.builtin_functions`, :mod:`~lowering.pypto_reader.builtin_methods`
  and :mod:`~lowering.pypto_reader.std_modules`;
- what cannot be evaluated is :class:`~lowering.pypto_reader.values.Unknown`.

Subclasses provide names (``lookup``), ``pl`` calls (``call_pl``), calls of the file's own
functions (``call_function``) and what a kernel or orchestration makes of the rest.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from lowering.pypto_reader import (
    builtin_calls,
    builtin_methods,
    harness,
    host_tensors,
    read_context,
    std_modules,
)
from lowering.pypto_reader.builtin_functions import BUILTINS
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.values import (
    UNKNOWN,
    BoundMethod,
    BuiltinVal,
    ClassVal,
    DictVal,
    DtypeVal,
    ExternVal,
    FuncVal,
    HostTensorVal,
    IntVal,
    ModuleVal,
    ObjVal,
    PlRef,
    PyVal,
    RangeVal,
    SelfVal,
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
MAX_STATIC_LEN = 1 << 16  # longest sequence built by folding (``[0] * n``, ``range`` to a list)


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
        """A call of anything but ``pl`` and builtins: the file's functions and classes here."""
        if isinstance(func, FuncVal | BoundMethod | ClassVal):
            evaluated = self.eval_args(node)
            if evaluated is None:
                return Unknown(f"the arguments of '{ast.unparse(node.func)}'")
            return self.call_value(func, evaluated[0], evaluated[1], node)
        evaluated = self.eval_args(node)  # Python evaluates the arguments of any call
        if isinstance(func, ExternVal) and evaluated is not None:
            return self.call_extern(func, *evaluated)
        return UNKNOWN

    def call_extern(self, func: ExternVal, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """A call into a module outside the model tree: a harness record or a torch tensor
        the reader models; anything else is unknown (it is never run)."""
        if func.name.rsplit(".", 1)[-1] in harness.HARNESS_RECORDS:
            return harness.harness_record(func.name, args, kwargs)
        if host_tensors.is_constructor(func.name):
            return host_tensors.construct(self, func.name, args, kwargs)
        return UNKNOWN

    def call_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        """Run a function of the file on evaluated arguments (an interpreter of statements does)."""
        return Unknown(f"a call of '{func.name}'")

    def on_store_attribute(self, module: ModuleVal, name: str, value: Val, node: ast.AST) -> Val:
        """``mod.NAME = value`` on a module of the model tree: the value it gets bound to."""
        return value

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
        if isinstance(v, RangeVal):
            v = self.from_static(list(range(v.start, v.stop, v.step)))
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
            if any(i is UNKNOWN for i in items):
                return UNKNOWN
            if v.kind == "list":
                return items
            if v.kind == "set":
                try:
                    return frozenset(items)
                except TypeError:
                    return UNKNOWN
            return tuple(items)
        if isinstance(v, DictVal):
            out = {}
            for k, item in v.items.items():
                s = self.static(item)
                if s is UNKNOWN:
                    return UNKNOWN
                out[k] = s
            return out
        if isinstance(v, RangeVal):
            return range(v.start, v.stop, v.step)
        return UNKNOWN

    def from_static(self, value: object) -> Val:
        return _py(value)

    def truth(self, v: Val) -> bool | None:
        """Python truthiness, None when it cannot be known here."""
        if isinstance(v, IntVal | PyVal):
            s = self.static(v)
            return None if s is UNKNOWN else bool(s)
        if isinstance(v, SeqVal):
            return bool(v.items)
        if isinstance(v, DictVal):
            return bool(v.items)
        if isinstance(v, RangeVal):
            return len(v) > 0
        if isinstance(v, FuncVal | ClassVal | ModuleVal | BoundMethod | BuiltinVal | PlRef | DtypeVal):
            return True
        if isinstance(v, ObjVal):
            return True
        return None

    def iterate(self, v: Val) -> list[Val] | None:
        """The items a ``for`` over ``v`` visits, when they are known (at most MAX_STATIC_LEN)."""
        if isinstance(v, SeqVal):
            return list(v.items)
        if isinstance(v, RangeVal):
            if len(v) > MAX_STATIC_LEN:
                return None
            return [IntVal(Const(i)) for i in range(v.start, v.stop, v.step)]
        if isinstance(v, DictVal):
            return [self.from_static(k) for k in v.items]
        if isinstance(v, PyVal) and isinstance(v.value, str):
            return [PyVal(c) for c in v.value]
        return None

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
        v = self.lookup(node.id, node)
        if isinstance(v, Unknown) and v.why.startswith("unknown name") and node.id in BUILTINS:
            return BUILTINS[node.id]
        return v

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
        if isinstance(base, ModuleVal):
            return base.module.globals.get(attr, Unknown(f"'{attr}' of module {base.module.name}"))
        if isinstance(base, ExternVal):
            return std_modules.module_attribute(base.name, attr)
        if isinstance(base, TensorVal) and attr == "shape":
            return self.tensor_shape(base)
        if isinstance(base, HostTensorVal):
            found = host_tensors.attribute(self, base, attr)
            return found if found is not None else Unknown(f"'{attr}' of a torch tensor")
        if isinstance(base, ObjVal):
            if attr in base.attrs:
                return base.attrs[attr]
            if base.cls is not None:
                return self.class_attribute(base.cls, attr, base, node)
        if isinstance(base, ClassVal):
            return self.class_attribute(base, attr, None, node)
        if isinstance(base, SelfVal):
            m = base.cls.method(attr)
            return m if m is not None else Unknown(f"self.{attr}")
        if isinstance(base, FuncVal):
            launch = harness.launch_method(base, attr)
            if launch is not None:
                return launch
        method = builtin_methods.method_of(base, attr)
        if method is not None:
            return method
        return Unknown(f"attribute '{attr}'")

    def class_attribute(self, cls: ClassVal, attr: str, instance: ObjVal | None, node: ast.AST) -> Val:
        """``cls.attr`` or ``instance.attr`` through the class: methods bind, properties run."""
        v = cls.lookup(attr)
        if v is None:
            if attr == "__name__":
                return PyVal(cls.name)
            return Unknown(f"attribute '{attr}' of {cls.name}")
        if isinstance(v, FuncVal) and v.kind == "plain":
            if v.wrapper == "property":
                return self.call_value(v, [instance or cls], {}, node) if instance is not None else v
            if v.wrapper == "staticmethod":
                return v
            if v.wrapper == "classmethod":
                return BoundMethod(v, cls)
            if instance is not None:
                return BoundMethod(v, instance)
        return v

    def tensor_shape(self, t: TensorVal) -> Val:
        return Unknown("tensor shape")

    def e_Tuple(self, node: ast.Tuple) -> Val:
        items = self.eval_items(node.elts)
        return SeqVal(items, "tuple") if items is not None else Unknown("a starred item")

    def e_List(self, node: ast.List) -> Val:
        items = self.eval_items(node.elts)
        return SeqVal(items, "list") if items is not None else Unknown("a starred item")

    def e_Set(self, node: ast.Set) -> Val:
        items = self.eval_items(node.elts)
        return SeqVal(items, "set") if items is not None else Unknown("a starred item")

    def eval_items(self, elts: list[ast.expr]) -> list[Val] | None:
        out: list[Val] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                items = self.iterate(self.eval(e.value))
                if items is None:
                    return None
                out.extend(items)
            else:
                out.append(self.eval(e))
        return out

    def e_Dict(self, node: ast.Dict) -> Val:
        out = DictVal()
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:  # **other
                other = self.eval(v)
                if not isinstance(other, DictVal):
                    return Unknown("a ** item")
                out.items.update(other.items)
                continue
            key = self.static(self.eval(k))
            if key is UNKNOWN or not _hashable(key):
                return Unknown("a dict key")
            out.items[key] = self.eval(v)
        return out

    def e_Slice(self, node: ast.Slice) -> Val:
        parts = [
            self.static(self.eval(p)) if p is not None else None for p in (node.lower, node.upper, node.step)
        ]
        if any(p is UNKNOWN for p in parts):
            return UNKNOWN
        return PyVal(slice(*parts))

    def e_JoinedStr(self, node: ast.JoinedStr) -> Val:
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
                continue
            if not isinstance(part, ast.FormattedValue):
                return UNKNOWN
            v = self.static(self.eval(part.value))
            spec = self.static(self.eval(part.format_spec)) if part.format_spec is not None else ""
            if v is UNKNOWN or spec is UNKNOWN:
                return UNKNOWN
            try:
                if part.conversion == ord("r"):
                    v = repr(v)
                elif part.conversion == ord("s"):
                    v = str(v)
                out.append(format(v, spec))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return UNKNOWN
        return PyVal("".join(out))

    def e_Lambda(self, node: ast.Lambda) -> Val:
        return self.make_function(node)

    def make_function(self, node: ast.FunctionDef | ast.Lambda) -> Val:
        return Unknown("a function defined here")

    def e_ListComp(self, node: ast.ListComp) -> Val:
        items = self.comprehension(node.generators, lambda: [self.eval(node.elt)])
        return SeqVal(items, "list") if items is not None else Unknown("a comprehension")

    def e_SetComp(self, node: ast.SetComp) -> Val:
        items = self.comprehension(node.generators, lambda: [self.eval(node.elt)])
        return SeqVal(items, "set") if items is not None else Unknown("a comprehension")

    def e_GeneratorExp(self, node: ast.GeneratorExp) -> Val:
        items = self.comprehension(node.generators, lambda: [self.eval(node.elt)])
        return SeqVal(items, "tuple") if items is not None else Unknown("a generator")

    def e_DictComp(self, node: ast.DictComp) -> Val:
        pairs = self.comprehension(
            node.generators, lambda: [SeqVal((self.eval(node.key), self.eval(node.value)))]
        )
        if pairs is None:
            return Unknown("a comprehension")
        out = DictVal()
        for pair in pairs:
            key = self.static(pair.items[0])  # type: ignore[attr-defined]
            if key is UNKNOWN or not _hashable(key):
                return Unknown("a dict key")
            out.items[key] = pair.items[1]  # type: ignore[attr-defined]
        return out

    def comprehension(
        self, generators: list[ast.comprehension], element: Callable[[], list[Val]]
    ) -> list[Val] | None:
        """The values of a comprehension, its targets bound in a scope of their own."""
        out: list[Val] = []
        scope = self.push_scope()
        try:
            ok = self._generate(generators, 0, element, out)
        finally:
            self.pop_scope(scope)
        return out if ok else None

    def _generate(self, gens: list[ast.comprehension], i: int, element, out: list[Val]) -> bool:
        if i == len(gens):
            out.extend(element())
            return len(out) <= MAX_STATIC_LEN
        gen = gens[i]
        items = self.iterate(self.eval(gen.iter))
        if items is None:
            return False
        for item in items:
            if not self.bind_target(gen.target, item):
                return False
            keep = True
            for cond in gen.ifs:
                t = self.truth(self.eval(cond))
                if t is None:
                    return False
                keep = keep and t
            if keep and not self._generate(gens, i + 1, element, out):
                return False
        return True

    def push_scope(self) -> object:
        """A scope for comprehension targets (subclasses keep their own frames)."""
        return None

    def pop_scope(self, token: object) -> None:
        return None

    def bind_target(self, target: ast.expr, value: Val) -> bool:
        """Bind an assignment or loop target in the current scope; False when it cannot be."""
        return False

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
            t = self.truth(v)
            return UNKNOWN if t is None else PyVal(not t)
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
            if isinstance(op, ast.Div):
                va, vb = self.value_of(ia), self.value_of(ib)
                if va is not None and vb and va % vb:
                    return PyVal(va / vb)  # a true quotient in host code (``1.0 / HC_DIM``)
            return IntVal(binop(_ARITH[type(op)], ia, ib))
        if ia is not None and ib is not None and isinstance(ia, Const) and isinstance(ib, Const):
            fn = _PY_BIN.get(type(op))
            if fn is not None:
                try:
                    return self.from_static(fn(ia.value, ib.value))
                except (ArithmeticError, ValueError, OverflowError):
                    return UNKNOWN
        if isinstance(op, ast.Add) and isinstance(a, SeqVal) and isinstance(b, SeqVal) and a.kind == b.kind:
            return SeqVal(a.items + b.items, a.kind)
        if isinstance(op, ast.Mult) and isinstance(a, SeqVal | IntVal) and isinstance(b, SeqVal | IntVal):
            seq, count = (a, b) if isinstance(a, SeqVal) else (b, a)
            n = self.static(count)
            if (
                isinstance(seq, SeqVal)
                and isinstance(n, int)
                and len(seq.items) * max(n, 0) <= MAX_STATIC_LEN
            ):
                return SeqVal(seq.items * max(n, 0), seq.kind)
        if isinstance(op, ast.BitOr) and isinstance(a, DictVal) and isinstance(b, DictVal):
            return DictVal({**a.items, **b.items})
        if isinstance(a, HostTensorVal) or isinstance(b, HostTensorVal):
            return host_tensors.binary(self, a, b)
        sa, sb = self.static(a), self.static(b)
        if sa is not UNKNOWN and sb is not UNKNOWN:
            fn = _PY_BIN.get(type(op))
            try:
                if fn is not None and _small(sa) and _small(sb):
                    return self.from_static(fn(sa, sb))
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
        for i, v in enumerate(vals):  # Python's short circuit: the deciding operand is the value
            t = self.truth(v)
            if t is None:
                return UNKNOWN
            if i == len(vals) - 1 or (t if name == "or" else not t):
                return v
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
                    ta, tb = self.truth(out), self.truth(one)
                    out = UNKNOWN if None in (ta, tb) else PyVal(bool(ta and tb))
            left = right
        return out if out is not None else UNKNOWN

    def compare(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
        ia, ib = self.int_expr(a), self.int_expr(b)
        if ia is not None and ib is not None and type(op) in _CMP:
            return IntVal(binop(_CMP[type(op)], ia, ib))
        if isinstance(op, ast.In | ast.NotIn):
            found = self.contains(b, a)
            if found is not None:
                return PyVal(found if isinstance(op, ast.In) else not found)
        if isinstance(op, ast.Is | ast.IsNot):
            same = self.identical(a, b)
            if same is not None:
                return PyVal(same if isinstance(op, ast.Is) else not same)
        if isinstance(op, ast.Eq | ast.NotEq):
            same = host_tensors.same_dtype(a, b)
            if same is not None:
                return PyVal(same if isinstance(op, ast.Eq) else not same)
        sa, sb = self.static(a), self.static(b)
        if sa is not UNKNOWN and sb is not UNKNOWN:
            try:
                return PyVal(bool(_PY_CMP[type(op)](sa, sb)))
            except Exception:  # noqa: BLE001 - e.g. comparing str with int
                return UNKNOWN
        return self.compare_other(op, a, b, node)

    def contains(self, container: Val, item: Val) -> bool | None:
        """``item in container`` when it can be decided."""
        if isinstance(container, DictVal):
            key = self.static(item)
            return None if key is UNKNOWN or not _hashable(key) else key in container.items
        if isinstance(container, SeqVal):
            needle = self.static(item)
            if needle is UNKNOWN:
                return None
            unknown = False
            for x in container.items:
                s = self.static(x)
                if s is UNKNOWN:
                    unknown = True
                elif s == needle:
                    return True
            return None if unknown else False
        if isinstance(container, RangeVal):
            n = self.static(item)
            return n in range(container.start, container.stop, container.step) if isinstance(n, int) else None
        if isinstance(container, PyVal) and isinstance(container.value, str):
            s = self.static(item)
            return s in container.value if isinstance(s, str) else None
        if isinstance(container, read_context.EnvironVal):
            return False  # the reader runs with an empty environment: defaults apply
        return None

    def identical(self, a: Val, b: Val) -> bool | None:
        """``a is b`` (None and singletons by value, the file's objects by identity)."""
        for x, y in ((a, b), (b, a)):
            if isinstance(y, PyVal) and y.value is None:
                if isinstance(x, PyVal):
                    return x.value is None
                if isinstance(x, Unknown | TensorVal | ExternVal):
                    return None
                return False
        if isinstance(a, PyVal) and isinstance(b, PyVal):
            return a.value is b.value or (type(a.value) is type(b.value) and a.value == b.value)
        if isinstance(a, ObjVal | ClassVal | FuncVal | SeqVal | DictVal | ModuleVal):
            return a is b
        return None

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

    def e_NamedExpr(self, node: ast.NamedExpr) -> Val:
        v = self.eval(node.value)
        self.bind_target(node.target, v)
        return v

    def e_Subscript(self, node: ast.Subscript) -> Val:
        base = self.eval(node.value)
        if isinstance(base, SeqVal | DictVal | RangeVal) or (
            isinstance(base, PyVal) and isinstance(base.value, str | bytes)
        ):
            return self.index(base, self.eval(node.slice))
        return self.subscript(base, node)

    def index(self, base: Val, key: Val) -> Val:
        """``base[key]`` on a sequence, dict, range or string."""
        k = self.static(key)
        if k is UNKNOWN:
            return UNKNOWN
        if isinstance(base, DictVal):
            return base.items.get(k, Unknown(f"key {k!r}")) if _hashable(k) else UNKNOWN
        if isinstance(base, SeqVal):
            if isinstance(k, slice):
                return SeqVal(base.items[k], base.kind if base.kind != "set" else "tuple")
            if isinstance(k, int) and -len(base.items) <= k < len(base.items):
                return base.items[k]
            return UNKNOWN
        if isinstance(base, RangeVal):
            r = range(base.start, base.stop, base.step)
            try:
                out = r[k]  # type: ignore[index]
            except (IndexError, TypeError):
                return UNKNOWN
            return RangeVal(out.start, out.stop, out.step) if isinstance(out, range) else IntVal(Const(out))
        if isinstance(base, PyVal):
            try:
                return self.from_static(base.value[k])  # type: ignore[index]
            except Exception:  # noqa: BLE001 - static indexing that fails in Python too
                return UNKNOWN
        return UNKNOWN

    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        return UNKNOWN

    def e_Call(self, node: ast.Call) -> Val:
        func = self.eval(node.func)
        if isinstance(func, PlRef):
            return self.call_pl(func.path, node)
        if isinstance(func, BuiltinVal):
            evaluated = self.eval_args(node)
            if evaluated is None:
                return Unknown(f"the arguments of '{func.name}'")
            return self.call_value(func, evaluated[0], evaluated[1], node)
        return self.call_other(func, node)

    def eval_args(self, node: ast.Call) -> tuple[list[Val], dict[str, Val]] | None:
        """Positional and keyword arguments of a call (``*xs`` and ``**kw`` expanded)."""
        args: list[Val] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                items = self.iterate(self.eval(a.value))
                if items is None:
                    return None
                args.extend(items)
            else:
                args.append(self.eval(a))
        kwargs: dict[str, Val] = {}
        for kw in node.keywords:
            if kw.arg is None:
                d = self.eval(kw.value)
                if not isinstance(d, DictVal) or not all(isinstance(k, str) for k in d.items):
                    return None
                kwargs.update(d.items)  # type: ignore[arg-type]
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        return args, kwargs

    def call_value(self, func: Val, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        """Call an evaluated callable on evaluated arguments."""
        if isinstance(func, BuiltinVal):
            if func.self_val is not None:
                args = [func.self_val, *args]
            try:
                return func.fn(self, args, kwargs, node)
            except builtin_calls.StaticError as err:
                return Unknown(str(err))
        if isinstance(func, BoundMethod):
            return self.call_value(func.func, [func.self_val, *args], kwargs, node)
        if isinstance(func, FuncVal):
            return self.call_function(func, args, kwargs, node)
        if isinstance(func, ClassVal):
            return self.instantiate(func, args, kwargs, node)
        if isinstance(func, ExternVal):
            out = self.call_extern(func, args, kwargs)
            return out if out is not UNKNOWN else Unknown(f"a call of {func.name}")
        return Unknown(f"a call of {type(func).__name__}")

    def instantiate(self, cls: ClassVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        """``Cls(...)``: a dataclass binds its fields; a plain class runs its ``__init__``."""
        obj = ObjVal(cls)
        if cls.dataclass or any(b.dataclass for b in cls.bases):
            fields = cls.all_fields()
            names = [n for n, _ in fields]
            if len(args) > len(names):
                return Unknown(f"too many arguments for {cls.name}")
            bound = dict(zip(names, args, strict=False))
            for k, v in kwargs.items():
                if k not in names or k in bound:
                    return Unknown(f"argument '{k}' of {cls.name}")
                bound[k] = v
            for name, default in fields:
                if name in bound:
                    obj.attrs[name] = bound[name]
                elif default is not None:
                    obj.attrs[name] = self.field_default(cls, default)
                else:
                    obj.attrs[name] = Unknown(f"field '{name}' of {cls.name} not given")
            post = cls.method("__post_init__")
            if post is not None:
                self.call_value(post, [obj], {}, node)
            return obj
        init = cls.method("__init__")
        if init is not None:
            self.call_value(init, [obj, *args], kwargs, node)
        return obj

    def field_default(self, cls: ClassVal, default: ast.expr) -> Val:
        """The default of a dataclass field: ``= value`` or ``field(default=...,
        default_factory=...)``, evaluated in the class's module."""
        return Unknown("a field default")

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
        if len(args) == 1:
            items = self.iterate(args[0])
            if items is None or not items:
                return UNKNOWN
            args = items
        folded = self.fold_ints(name, args)
        if folded is not None:
            return folded
        statics = [self.static(a) for a in args]
        if all(s is not UNKNOWN for s in statics):
            try:
                return self.from_static(min(statics) if name == "min" else max(statics))  # type: ignore[type-var]
            except TypeError:
                return UNKNOWN
        return UNKNOWN

    def scalar_pl(self, path: str, node: ast.Call) -> Val:
        """``pl.min``/``pl.max`` on scalars and ``pl.dynamic``; other ``pl`` calls are unknown here."""
        short = path.rsplit(".", 1)[-1]
        if short in ("min", "max") and len(node.args) == 2:
            return self.minmax(short, [self.eval(a) for a in node.args])
        if path == "pl.dynamic":
            name = self.static(self.eval(node.args[0])) if node.args else None
            return self.dynamic_axis(str(name or "dyn"), node)
        if short in ("cast", "const"):  # pl.cast(i, pl.INDEX), pl.const(1, pl.INT32)
            b = self.arguments(node, ["input", "target_type"] if short == "cast" else ["value", "dtype"])
            value, dtype = b.get("input", b.get("value")), b.get("target_type", b.get("dtype"))
            if value is not None and dtype is not None:
                return self.integer_cast(self.eval(value), self.eval(dtype)) or UNKNOWN
        return UNKNOWN

    def integer_cast(self, value: Val, dtype: Val) -> IntVal | None:
        """``pl.cast(i, pl.INDEX)`` of an integer to an integer dtype: the same integer (offsets
        and row counts pass through such casts); None for anything else."""
        v = self.int_expr(value)
        if v is None or not isinstance(dtype, DtypeVal) or dtype.dtype is None or dtype.dtype[0] not in "iu":
            return None
        return IntVal(v)

    def dynamic_axis(self, name: str, node: ast.AST) -> Val:
        """``pl.dynamic(name)``: a runtime extent (an interpreter with parameters ranges it)."""
        return IntVal(Sym(name, "scalar"))

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
    if isinstance(value, list):
        return SeqVal([_py(v) for v in value], "list")
    if isinstance(value, tuple):
        return SeqVal([_py(v) for v in value], "tuple")
    if isinstance(value, set | frozenset):
        return SeqVal([_py(v) for v in value], "set")
    if isinstance(value, dict):
        return DictVal({k: _py(v) for k, v in value.items()})
    if isinstance(value, range):
        return RangeVal(value.start, value.stop, value.step)
    if isinstance(value, str | float | bytes | complex | slice):
        return PyVal(value)
    return Unknown(f"a {type(value).__name__}")


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _small(value: object) -> bool:
    """Guards static folding against blow-ups (``"x" * 10**9``, ``2 ** 10**9``)."""
    if isinstance(value, int):
        return value.bit_length() <= 4096
    if isinstance(value, str | bytes | tuple | list):
        return len(value) <= MAX_STATIC_LEN
    return True


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
