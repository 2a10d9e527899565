"""The host side of a generated NumPy module: ``check_request``, the layer's guards.

``check_request(scalars) -> list[str]`` takes the runtime scalars of one request and returns
the reasons it is refused (empty: accepted): a scalar outside its declared range, or a
``guard cond, "message"`` that does not hold. Derived host scalars (``scalar n = expr``, and
``emitted(T)`` of a derived capacity) are computed from the runtime scalars into ``d_<i>``
locals, once, and a guard that names one reports its value. Runtime scalars are
``s_<name>`` locals (names checked against ``IDENTIFIER``); parameters are folded to
literals; guard texts, messages and derived names appear only as string literals (``py_str``).
"""

from __future__ import annotations

from lowering.codegen.names import UnsafeName, checked_name
from lowering.codegen.python_text import LINE_LENGTH, py_literal, py_str, unparen
from lowering.ir import Graph
from lowering.symbolic import SCALAR, Bin, Const, Expr, Sym, free_symbols, substitute


def host_code(expr: Expr, env: dict[str, int], known: dict[Expr, str] | None = None) -> str:
    """Python for a host expression over runtime scalars (``s_<name>``), parameters and
    constants folded to literals; comparisons and logic give ints, as in ``symbolic``. A
    subexpression equal to a derived value already computed (``known``) is its ``d_<i>``."""
    known = known or {}

    def py(e: Expr) -> str:
        if e in known:
            return known[e]
        if isinstance(e, Const):
            return str(e.value) if e.value >= 0 else f"({e.value})"
        if isinstance(e, Sym):
            if e.kind != SCALAR:
                raise UnsafeName(f"a host guard cannot use {e.name!r}")
            return f"s_{checked_name(e.name)}"
        assert isinstance(e, Bin)
        a, b = py(e.a), py(e.b)
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        if e.op == "cdiv":
            return f"(-((-{a}) // {b}))"
        if e.op in ("and", "or"):
            return f"int(bool({a}) {e.op} bool({b}))"
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            return f"int({a} {e.op} {b})"
        if e.op in ("+", "-", "*", "//", "%"):
            return f"({a} {e.op} {b})"
        raise UnsafeName(f"unknown operator {e.op!r} in a host guard")

    return py(substitute(expr, {k: Const(v) for k, v in env.items()}))


def _pairs(items: list[tuple[str, str]]) -> str:
    """``(("seq_len", d_0), ...)``: names as literals, values as checked code."""
    pairs = [f"({py_str(name)}, {code})" for name, code in items]
    return "(" + ", ".join(pairs) + ("," if len(pairs) == 1 else "") + ")"


def guard_context(graph: Graph, env: dict[str, int]) -> dict:
    """What ``check_request`` needs: the runtime scalars it reads (with their ranges), the
    derived values it computes (in definition order) and, per guard, its condition and the
    values a refusal names."""
    fold = {k: Const(v) for k, v in env.items()}
    derived = [(n, d) for n, d in graph.derived.items() if d.value is not None]
    index = {name: i for i, (name, _) in enumerate(derived)}
    ranged = [s for s in graph.scalars.values() if s.domain is not None and s.name != "epoch"]
    names = {s.name for s in ranged}
    for g in graph.guards:
        names |= {s.name for s in free_symbols(g.cond) if s.kind == SCALAR}
    order = list(graph.scalars)
    scalars = sorted(
        (checked_name(n) for n in names),
        key=lambda n: (n not in order, order.index(n) if n in order else 0, n),
    )
    known: dict[Expr, str] = {}
    values = []
    for name, d in derived:
        if not {s.name for s in free_symbols(d.value) if s.kind == SCALAR} <= names:
            continue  # reads a scalar no guard reads: not needed here
        var = f"d_{index[name]}"
        values.append({"var": var, "code": unparen(host_code(d.value, env, known))})
        known[substitute(d.value, fold)] = var
    guards = []
    for g in graph.guards:
        named: list[str] = []  # derived values the guard names, and the ones they name
        queue = [n for n in g.scalars if n in index]
        while queue:
            n = queue.pop(0)
            if n not in named and f"d_{index[n]}" in known.values():
                named.append(n)
                queue.extend(r for r in graph.derived[n].refs if r in index)
        sides = "None"
        if isinstance(g.cond, Bin) and g.cond.op in ("==", "!=", "<", "<=", ">", ">="):
            sides = (
                f"({host_code(g.cond.a, env, known)}, {py_str(g.cond.op)}, {host_code(g.cond.b, env, known)})"
            )
        guards.append(
            {
                "cond": host_code(g.cond, env, known),
                "text": g.text,
                "message": g.message or "",
                "line": g.span.line,
                "named": _pairs([(n, f"d_{index[n]}") for n in named]),
                "sides": sides,
            }
        )
    ranges = []
    for s in ranged:
        var = f"s_{checked_name(s.name)}"
        dom = s.domain
        if dom.values is not None:
            test = f"{var} in {py_literal(tuple(sorted(set(dom.values))))}"
        elif dom.step != 1:
            test = f"{dom.lo} <= {var} <= {dom.hi} and ({var} - {dom.lo}) % {dom.step} == 0"
        else:
            test = f"{dom.lo} <= {var} <= {dom.hi}"
        ranges.append(
            {"var": var, "test": test, "say": (f"runtime scalar {s.name}=", f" is outside its range {dom}")}
        )
    return {
        "scalars": scalars,
        "given": _pairs([(n, f"s_{n}") for n in scalars]),
        "ranges": ranges,
        "derived": values,
        "guards": guards,
        "guards_line": _one_line(guards),
    }


def _one_line(guards: list[dict]) -> str | None:
    """``GUARDS = ((text, message, line),)`` when there is one guard and it fits a line (how ruff
    writes a one-item tuple); None for the one-per-line form."""
    if len(guards) != 1:
        return None
    g = guards[0]
    line = f"GUARDS = ({py_literal((g['text'], g['message'], g['line']))},)"
    return line if len(line) <= LINE_LENGTH else None
