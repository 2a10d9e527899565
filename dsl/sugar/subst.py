"""Rewriting AST nodes: name substitution and generic child mapping over frozen dataclasses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from dsl import ast


def map_children(node, fn: Callable):
    """Rebuild ``node`` with ``fn`` applied to every child node (tuples included)."""
    if not dataclasses.is_dataclass(node):
        return node
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        new = _map_value(value, fn)
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(node, **changes) if changes else node


def _map_value(value, fn):
    if isinstance(value, ast.Node):
        return fn(value)
    if isinstance(value, tuple):
        items = tuple(_map_value(v, fn) for v in value)
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def substitute(node, mapping: Mapping[str, ast.Expr]):
    """Replace free uses of names (``Name`` nodes) by expressions."""

    def visit(n):
        if isinstance(n, ast.Name) and n.id in mapping:
            return mapping[n.id]
        return map_children(n, visit)

    return visit(node)


def names_used(node) -> set[str]:
    out: set[str] = set()

    def visit(n):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Access):
            out.add(n.name)
        map_children(n, visit)
        return n

    visit(node)
    return out
