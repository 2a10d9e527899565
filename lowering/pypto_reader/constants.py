"""Module constants as the parameters of a PyPTO program, with their admissible values.

An integer module constant whose value is a literal (or comes from a ``config`` module, an
argv default or an ``os.environ`` default) is a *parameter*; one computed from others is a
*constant* with a symbolic definition, exactly like ``layer f(T = 512)`` / ``const CAP = T / 2``
in the DSL, so the rules can re-evaluate everything at every admissible parameter point.

Admissible values come from
- ``assert NAME in (2, 4, 8, 16)``, ``assert NAME in range(128, 8193, 128)`` or
  ``assert 128 <= NAME <= 8192`` at module level, and
- argparse options whose default is the constant (``add_argument("--ep", default=EP,
  choices=[2, 4, 8, 16])``) or that rebind it in ``__main__`` (``EP = args.ep``).

Any other module-level ``assert`` over constants is a layer assertion: it narrows the
admissible points, and one that fails at the chosen values is P005.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from lowering import parameters
from lowering.pypto_reader.notes import Notes, span_of
from lowering.source import Span
from lowering.symbolic import PARAM, EvalError, Expr, Sym, evaluate, free_symbols

CONST = "const"  # the symbol kind of derived constants (as in the DSL front end)


@dataclass
class ParamDef:
    name: str
    value: int | None  # None: a dynamic axis not yet ranged (see ``dynamic``)
    default: int | None
    span: Span
    domain: parameters.Domain | None = None
    dynamic: bool = False  # a ``pl.dynamic`` axis: its values come from the request bindings


@dataclass
class ConstDef:
    name: str
    expr: Expr
    value: int
    span: Span


@dataclass
class ArgOption:
    """One ``parser.add_argument("--name", ...)``: its dest, default and choices (ast nodes)."""

    dest: str
    default: ast.expr | None
    choices: ast.expr | None
    span: Span


@dataclass
class Params:
    """Every integer constant of the program (across the file, its config and helper modules)."""

    overrides: dict[str, int] = field(default_factory=dict)
    params: dict[str, ParamDef] = field(default_factory=dict)
    consts: dict[str, ConstDef] = field(default_factory=dict)
    assertions: list[parameters.Assertion] = field(default_factory=list)
    used_overrides: set[str] = field(default_factory=set)
    # ``--set ALIAS=v`` where ALIAS is a module constant renaming a parameter: the read is
    # repeated with the parameter itself set (see ``lowering.pypto_reader.read_pypto``).
    redirects: dict[str, int] = field(default_factory=dict)
    _env: dict[str, int] | None = None

    def env(self) -> dict[str, int]:
        if self._env is None:
            env = {p.name: p.value for p in self.params.values() if p.value is not None}
            env.update({c.name: c.value for c in self.consts.values()})
            self._env = env
        return self._env

    def dynamic(self, name: str, span: Span) -> Expr:
        """The parameter standing for dynamic axis ``name`` (``pl.dynamic("name")``); it gets
        its admissible values and its value later, from the request bindings."""
        old = self.params.get(name)
        if old is None:
            self.params[name] = ParamDef(name, None, None, span, None, dynamic=True)
            self._env = None
        return Sym(name, PARAM)

    def range_dynamic(self, name: str, values: list[int]) -> None:
        """Admissible values of a dynamic axis; its value at the compiled point is the largest
        (an override with ``--set`` wins)."""
        p = self.params[name]
        p.domain = parameters.Domain(values=tuple(sorted(set(values))))
        p.default = max(values)
        p.value = self.overrides.get(name, p.default)
        if name in self.overrides:
            self.used_overrides.add(name)
        self._env = None

    def root_param(self, name: str) -> str | None:
        """The parameter ``name`` is, or renames through constants bound to a bare symbol."""
        seen = set()
        while name not in self.params:
            c = self.consts.get(name)
            if c is None or not isinstance(c.expr, Sym) or name in seen:
                return None
            seen.add(name)
            name = c.expr.name
        return name

    def define(self, name: str, expr: Expr, span: Span) -> Expr:
        """Bind module constant ``name`` to ``expr``; returns the symbol that stands for it
        (or ``expr`` itself when it depends on runtime values and is no constant)."""
        syms = free_symbols(expr)
        if any(s.kind not in (PARAM, CONST) for s in syms):
            return expr
        if isinstance(expr, Sym) and expr.name == name:
            return expr
        try:
            value = evaluate(expr, self.env())
        except EvalError:
            return expr
        self._env = None
        if isinstance(expr, Sym) and name in self.overrides:
            root = self.root_param(expr.name)
            if root is not None:
                self.redirects.setdefault(root, self.overrides[name])
                self.used_overrides.add(name)
        if not syms:
            if name in self.consts:
                del self.consts[name]
            default = value
            if name in self.overrides:
                value = self.overrides[name]
                self.used_overrides.add(name)
            old = self.params.get(name)
            self.params[name] = ParamDef(name, value, default, span, old.domain if old else None)
            return Sym(name, PARAM)
        if name in self.params:
            del self.params[name]
        self.consts[name] = ConstDef(name, expr, value, span)
        return Sym(name, CONST)

    def set_domain(self, name: str, values: list[int] | None, rng: tuple[int, int, int] | None) -> bool:
        p = self.params.get(name)
        if p is None:
            return False
        if values is not None:
            p.domain = parameters.Domain(values=tuple(values))
        elif rng is not None:
            lo, hi, step = rng
            if step <= 0 or hi < lo:
                return False
            p.domain = parameters.Domain(lo, hi, step)
        return True


def range_domain(args: list) -> tuple[int, int, int] | None:
    """``range(*args)`` as (first, last, step) of its values; None unless ``args`` are 1 to 3
    ints giving a non-empty range with a positive step."""
    if not (1 <= len(args) <= 3 and all(isinstance(a, int) for a in args)):
        return None
    start, stop, step = (
        (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    )
    if step <= 0 or stop <= start:
        return None
    return start, last_in_range(start, stop, step), step


def last_in_range(start: int, stop: int, step: int) -> int:
    """The last value of ``range(start, stop, step)`` (``step`` > 0)."""
    return start + (stop - 1 - start) // step * step


def domain_of_assert(
    test: ast.expr, static, params: Params, prefix: str = ""
) -> tuple[str, list[int] | None, tuple | None] | None:
    """``NAME in (...)`` / ``NAME in range(...)`` / ``lo <= NAME <= hi`` -> (param, values, range).

    ``NAME`` is a module constant that is a parameter or renames one (``N_RANKS = EP``).
    ``static`` evaluates an ast expression to a Python value (or the UNKNOWN sentinel).
    """

    def param(node: ast.expr) -> str | None:
        return params.root_param(prefix + node.id) if isinstance(node, ast.Name) else None

    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.In)
        and param(test.left) is not None
    ):
        name = param(test.left)
        assert name is not None
        right = test.comparators[0]
        if isinstance(right, ast.Call) and isinstance(right.func, ast.Name) and right.func.id == "range":
            rng = range_domain([static(a) for a in right.args])
            return (name, None, rng) if rng is not None else None
        values = static(right)
        if isinstance(values, range) and values.step > 0 and len(values):
            return name, None, (values.start, values[-1], values.step)
        if (
            isinstance(values, tuple | list | set | frozenset)
            and values
            and all(isinstance(v, int) for v in values)
        ):
            return name, sorted(set(values)), None
        return None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 2
        and all(isinstance(o, ast.LtE | ast.Lt) for o in test.ops)
        and param(test.comparators[0]) is not None
    ):
        lo, hi = static(test.left), static(test.comparators[1])
        if isinstance(lo, int) and isinstance(hi, int):
            lo += 0 if isinstance(test.ops[0], ast.LtE) else 1
            hi -= 0 if isinstance(test.ops[1], ast.LtE) else 1
            return param(test.comparators[0]), None, (lo, hi, 1)  # type: ignore[return-value]
    return None


def argv_options(tree: ast.Module, file: str, text: str) -> dict[str, ArgOption]:
    """Every ``*.add_argument("--x", ...)`` in the file, by dest."""
    out: dict[str, ArgOption] = {}
    lines = {i for i, line in enumerate(text.splitlines(), start=1) if "add_argument" in line}
    if not lines:
        return out
    roots = [
        s for s in tree.body if any(s.lineno <= i <= (s.end_lineno or s.lineno) for i in lines)
    ]  # only the statements that mention add_argument are walked
    for node in (n for root in roots for n in ast.walk(root)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        dest = None
        if isinstance(kws.get("dest"), ast.Constant):
            dest = kws["dest"].value
        else:
            longs = [f for f in flags if f.startswith("--")]
            name = (longs or flags or [""])[0].lstrip("-")
            dest = name.replace("-", "_") if name else None
        if dest:
            out[dest] = ArgOption(dest, kws.get("default"), kws.get("choices"), span_of(file, node))
    return out


def main_rebindings(tree: ast.Module) -> dict[str, str]:
    """``NAME = args.dest`` (or ``int(args.dest)``) inside ``if __name__ == "__main__":``."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.If) and _is_main_guard(stmt.test)):
            continue
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                value = node.value
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.args:
                    value = value.args[0]
                if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
                    out[node.targets[0].id] = value.attr
    return out


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


is_main_guard = _is_main_guard


def check_params(params: Params, notes: Notes, file: str) -> None:
    """P005 for --set names that match no constant and values outside their domains."""
    for name in sorted(set(params.overrides) - params.used_overrides):
        notes.add(
            "P005",
            Span.whole_file(file),
            f"--set {name}: the program has no integer module constant '{name}'",
            "constants: " + (", ".join(sorted(params.params)) or "none"),
        )
    for p in params.params.values():
        if p.domain is not None and p.value not in p.domain:
            source = "--set" if p.name in params.used_overrides else "value"
            notes.add(
                "P005", p.span, f"{p.name} = {p.value} ({source}) is outside its admissible set {p.domain}"
            )
    env = params.env()
    for a in params.assertions:
        try:
            ok = evaluate(a.cond, env)
        except EvalError:
            continue
        if not ok:
            point = ", ".join(
                f"{n}={p.value}" for n, p in sorted(params.params.items()) if n in _names(a.cond)
            )
            message = f"assertion failed: {a.message}" if a.message else "assertion failed"
            notes.add("P005", a.span, f"{message} (at {point or 'the current values'})")


def _names(expr: Expr) -> set[str]:
    return {s.name for s in free_symbols(expr)}
