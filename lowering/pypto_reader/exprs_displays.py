"""Displays: the expressions that build a value from parts -- tuples, lists, sets and dicts
(``[a, *b]``, ``{**d, k: v}``), comprehensions and f-strings.

A comprehension is unrolled over the known items of its iterables, its targets bound in a
scope of their own (the evaluator's ``push_scope``/``pop_scope``, which the interpreters keep);
it is unknown when an iterable or a filter cannot be known or the result grows past
``MAX_STATIC_LEN``.  An f-string is known when every value it formats is.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering.pypto_reader.exprs_static import MAX_STATIC_LEN, hashable
from lowering.pypto_reader.values import UNKNOWN, DictVal, PyVal, SeqVal, Unknown, Val

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator


def display_items(ev: Evaluator, elts: list[ast.expr]) -> list[Val] | None:
    """The items of a display, ``*xs`` expanded; None when a starred iterable is not known."""
    out: list[Val] = []
    for e in elts:
        if isinstance(e, ast.Starred):
            items = ev.iterate(ev.eval(e.value))
            if items is None:
                return None
            out.extend(items)
        else:
            out.append(ev.eval(e))
    return out


def _sequence(items: list[Val] | None, kind: str, why: str) -> Val:
    return SeqVal(items, kind) if items is not None else Unknown(why)


def tuple_display(ev: Evaluator, node: ast.Tuple) -> Val:
    return _sequence(display_items(ev, node.elts), "tuple", "a starred item")


def list_display(ev: Evaluator, node: ast.List) -> Val:
    return _sequence(display_items(ev, node.elts), "list", "a starred item")


def set_display(ev: Evaluator, node: ast.Set) -> Val:
    return _sequence(display_items(ev, node.elts), "set", "a starred item")


def list_comprehension(ev: Evaluator, node: ast.ListComp) -> Val:
    return _sequence(
        comprehension(ev, node.generators, lambda: [ev.eval(node.elt)]), "list", "a comprehension"
    )


def set_comprehension(ev: Evaluator, node: ast.SetComp) -> Val:
    return _sequence(
        comprehension(ev, node.generators, lambda: [ev.eval(node.elt)]), "set", "a comprehension"
    )


def generator_expression(ev: Evaluator, node: ast.GeneratorExp) -> Val:
    return _sequence(comprehension(ev, node.generators, lambda: [ev.eval(node.elt)]), "tuple", "a generator")


def dict_display(ev: Evaluator, node: ast.Dict) -> Val:
    """``{k: v, **other}`` with keys known to be hashable."""
    out = DictVal()
    for k, v in zip(node.keys, node.values, strict=True):
        if k is None:  # **other
            other = ev.eval(v)
            if not isinstance(other, DictVal):
                return Unknown("a ** item")
            out.items.update(other.items)
            continue
        key = ev.static(ev.eval(k))
        if key is UNKNOWN or not hashable(key):
            return Unknown("a dict key")
        out.items[key] = ev.eval(v)
    return out


def formatted_string(ev: Evaluator, node: ast.JoinedStr) -> Val:
    """An f-string, when every value it formats is known."""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
            continue
        if not isinstance(part, ast.FormattedValue):
            return UNKNOWN
        v = ev.static(ev.eval(part.value))
        spec = ev.static(ev.eval(part.format_spec)) if part.format_spec is not None else ""
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


def comprehension(
    ev: Evaluator, generators: list[ast.comprehension], element: Callable[[], list[Val]]
) -> list[Val] | None:
    """The values of a comprehension, its targets bound in a scope of their own."""
    out: list[Val] = []
    scope = ev.push_scope()
    try:
        ok = _generate(ev, generators, 0, element, out)
    finally:
        ev.pop_scope(scope)
    return out if ok else None


def _generate(ev: Evaluator, gens: list[ast.comprehension], i: int, element, out: list[Val]) -> bool:
    if i == len(gens):
        out.extend(element())
        return len(out) <= MAX_STATIC_LEN
    gen = gens[i]
    items = ev.iterate(ev.eval(gen.iter))
    if items is None:
        return False
    for item in items:
        if not ev.bind_target(gen.target, item):
            return False
        keep = True
        for cond in gen.ifs:
            t = ev.truth(ev.eval(cond))
            if t is None:
                return False
            keep = keep and t
        if keep and not _generate(ev, gens, i + 1, element, out):
            return False
    return True


def dict_comprehension(ev: Evaluator, node: ast.DictComp) -> Val:
    """``{k: v for ...}``, unrolled; unknown when a key is not known."""
    pairs = comprehension(ev, node.generators, lambda: [SeqVal((ev.eval(node.key), ev.eval(node.value)))])
    if pairs is None:
        return Unknown("a comprehension")
    out = DictVal()
    for pair in pairs:
        key = ev.static(pair.items[0])  # type: ignore[attr-defined]
        if key is UNKNOWN or not hashable(key):
            return Unknown("a dict key")
        out.items[key] = pair.items[1]  # type: ignore[attr-defined]
    return out
