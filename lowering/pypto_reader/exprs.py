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

The class is the evaluator's interface -- the table of expression handlers (``expressions``:
node type -> function), the hooks subclasses override and the operations other readers call --
and each kind of expression is computed by the functions of its own module, on the evaluator
they are given (so a subclass's hooks apply inside them): ``exprs_static`` (a value's static
value, truth and items), ``exprs_arithmetic``, ``exprs_comparisons``, ``exprs_displays``
(tuples, lists, sets, dicts, comprehensions, f-strings), ``exprs_subscripts``,
``exprs_attributes`` and ``exprs_calls``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, ClassVar

from lowering.pypto_reader import (
    exprs_arithmetic,
    exprs_attributes,
    exprs_calls,
    exprs_comparisons,
    exprs_displays,
    exprs_static,
    exprs_subscripts,
)
from lowering.pypto_reader.builtin_functions import BUILTINS
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.values import (
    UNKNOWN,
    ClassVal,
    DtypeVal,
    ExternVal,
    FuncVal,
    IntVal,
    ModuleVal,
    PyVal,
    TensorVal,
    Unknown,
    Val,
)
from lowering.symbolic import Const, EvalError, Expr, Sym, binop, evaluate


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


def constant_expression(ev: Evaluator, node: ast.Constant) -> Val:
    v = node.value
    if isinstance(v, int) and not isinstance(v, bool):
        return IntVal(Const(v))
    return PyVal(v)


def name_expression(ev: Evaluator, node: ast.Name) -> Val:
    v = ev.lookup(node.id, node)
    if isinstance(v, Unknown) and v.why.startswith("unknown name") and node.id in BUILTINS:
        return BUILTINS[node.id]
    return v


def assignment_expression(ev: Evaluator, node: ast.NamedExpr) -> Val:
    v = ev.eval(node.value)
    ev.bind_target(node.target, v)
    return v


class Evaluator:
    """Evaluates expressions; subclasses provide names (``lookup``) and calls (``call_*``)."""

    #: How each kind of expression is evaluated: a function of (evaluator, node). A reader
    #: built on this one extends the table; a kind missing from it is unknown.
    expressions: ClassVar[dict[type[ast.expr], Callable[[Any, Any], Val]]] = {
        ast.Constant: constant_expression,
        ast.Name: name_expression,
        ast.NamedExpr: assignment_expression,
        ast.Attribute: exprs_attributes.attribute_reference,
        ast.Tuple: exprs_displays.tuple_display,
        ast.List: exprs_displays.list_display,
        ast.Set: exprs_displays.set_display,
        ast.Dict: exprs_displays.dict_display,
        ast.JoinedStr: exprs_displays.formatted_string,
        ast.ListComp: exprs_displays.list_comprehension,
        ast.SetComp: exprs_displays.set_comprehension,
        ast.GeneratorExp: exprs_displays.generator_expression,
        ast.DictComp: exprs_displays.dict_comprehension,
        ast.Lambda: exprs_calls.lambda_expression,
        ast.UnaryOp: exprs_arithmetic.unary_operation,
        ast.BinOp: exprs_arithmetic.binary_operation,
        ast.BoolOp: exprs_comparisons.boolean_operation,
        ast.Compare: exprs_comparisons.comparison,
        ast.IfExp: exprs_comparisons.conditional_expression,
        ast.Slice: exprs_subscripts.slice_value,
        ast.Subscript: exprs_subscripts.subscription,
        ast.Call: exprs_calls.call_expression,
    }

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
        return exprs_calls.call_other(self, func, node)

    def call_extern(self, func: ExternVal, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """A call into a module outside the model tree (never run: harness records and torch
        tensors are modelled, anything else is unknown)."""
        return exprs_calls.call_extern(self, func, args, kwargs)

    def call_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        """Run a function of the file on evaluated arguments (an interpreter of statements does)."""
        return Unknown(f"a call of '{func.name}'")

    def on_store_attribute(self, module: ModuleVal, name: str, value: Val, node: ast.AST) -> Val:
        """``mod.NAME = value`` on a module of the model tree: the value it gets bound to."""
        return value

    def tensor_shape(self, t: TensorVal) -> Val:
        return Unknown("tensor shape")

    def make_function(self, node: ast.FunctionDef | ast.Lambda) -> Val:
        return Unknown("a function defined here")

    def push_scope(self) -> object:
        """A scope for comprehension targets (subclasses keep their own frames)."""
        return None

    def pop_scope(self, token: object) -> None:
        return None

    def bind_target(self, target: ast.expr, value: Val) -> bool:
        """Bind an assignment or loop target in the current scope; False when it cannot be."""
        return False

    def negate(self, v: Val, node: ast.AST) -> Val:
        return UNKNOWN

    def binary_other(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        return UNKNOWN

    def compare_other(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
        return UNKNOWN

    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        return UNKNOWN

    def field_default(self, cls: ClassVal, default: ast.expr) -> Val:
        """The default of a dataclass field: ``= value`` or ``field(default=...,
        default_factory=...)``, evaluated in the class's module."""
        return Unknown("a field default")

    def dynamic_axis(self, name: str, node: ast.AST) -> Val:
        """``pl.dynamic(name)``: a runtime extent (an interpreter with parameters ranges it)."""
        return IntVal(Sym(name, "scalar"))

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
        return exprs_static.int_items(self, v)

    def dtype_named(self, node: ast.expr | None, default: str) -> str:
        """The IR dtype a ``dtype=`` argument names (``pl.FP32`` -> ``f32``), else ``default``."""
        d = self.eval(node) if node is not None else None
        return d.dtype if isinstance(d, DtypeVal) and d.dtype else default

    def static(self, v: Val) -> object:
        return exprs_static.static(self, v)

    def from_static(self, value: object) -> Val:
        return exprs_static.python_value(value)

    def truth(self, v: Val) -> bool | None:
        return exprs_static.truth(self, v)

    def iterate(self, v: Val) -> list[Val] | None:
        return exprs_static.iterate(self, v)

    def fold_ints(self, op: str, args: list[Val]) -> IntVal | None:
        """``((a op b) op c) ...`` as one symbolic integer, when every argument is an integer."""
        ints = [self.int_expr(a) for a in args]
        if not all(i is not None for i in ints):
            return None
        out = ints[0]
        for i in ints[1:]:
            out = binop(op, out, i)  # type: ignore[arg-type]
        return IntVal(out)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- evaluation
    def eval(self, node: ast.expr) -> Val:
        handler = self.expressions.get(type(node))
        if handler is None:
            return Unknown(f"{type(node).__name__} expression")
        return handler(self, node)

    # ---------------------------------------------------------------- operations
    # What the readers built on the evaluator call (and some override); methods, so that an
    # override applies wherever the expression modules use them.
    def attribute(self, base: Val, attr: str, node: ast.AST) -> Val:
        return exprs_attributes.attribute(self, base, attr, node)

    def binary(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        return exprs_arithmetic.binary(self, op, a, b, node)

    def index(self, base: Val, key: Val) -> Val:
        return exprs_subscripts.index(self, base, key)

    def eval_args(self, node: ast.Call) -> tuple[list[Val], dict[str, Val]] | None:
        return exprs_calls.eval_args(self, node)

    def call_value(self, func: Val, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        return exprs_calls.call_value(self, func, args, kwargs, node)

    def instantiate(self, cls: ClassVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        return exprs_calls.instantiate(self, cls, args, kwargs, node)

    def minmax(self, name: str, args: list[Val]) -> Val:
        return exprs_calls.minmax(self, name, args)

    def scalar_pl(self, path: str, node: ast.Call) -> Val:
        return exprs_calls.scalar_pl(self, path, node)

    def integer_cast(self, value: Val, dtype: Val) -> IntVal | None:
        return exprs_calls.integer_cast(self, value, dtype)

    def arguments(self, node: ast.Call, names: list[str]) -> dict[str, ast.expr]:
        return exprs_calls.arguments(node, names)
