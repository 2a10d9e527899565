"""Which names a task scope assigns that the code around it reads afterwards.

A ``pl.at``/``pl.spmd`` body is outlined into a kernel; a tile it computes and the enclosing
function reads later (the next scope, a kernel call, a ``return``) leaves the kernel as a
buffer the runtime allocates for that task. The reader keeps only those tiles. A load of a
name the scope assigns may read the scope's value when it comes after the scope, or anywhere
in a loop that holds both (the previous iteration's value), and no store of the name between
the two kills it. Kills are judged by line: a store counts when it sits in a block that also
holds the load (a store in a sibling scope does not kill), so the answer errs towards keeping
the tile, which costs a buffer nobody reads and never an edge.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_REGIONS = (*_FUNCTIONS, *_LOOPS, ast.With, ast.AsyncWith, ast.If, ast.Try, ast.Module)


@dataclass(frozen=True)
class _Use:
    name: str
    line: int
    chain: tuple[ast.AST, ...]  # enclosing regions, outermost first


def live_after(tree: ast.Module, scope: ast.stmt) -> frozenset[str]:
    """Names assigned in ``scope`` that code of its function may read its value in."""
    cached = getattr(scope, "_dslc_live_after", None)
    if cached is not None:
        return cached
    path = _path_to(tree, scope)
    if path is None:
        return frozenset()
    func_at = max((i for i, n in enumerate(path) if isinstance(n, _FUNCTIONS)), default=0)
    func, outer = path[func_at], path[func_at:]
    assigned = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    loads, stores = _uses(func, scope, assigned)
    live = set()
    for use in loads:
        if use.name in live:
            continue
        if use.line > (scope.end_lineno or scope.lineno):
            since = scope.end_lineno or scope.lineno
        else:
            loop = next((n for n in reversed(use.chain) if isinstance(n, _LOOPS) and n in outer), None)
            if loop is None:
                continue  # before the scope, in no loop with it
            since = loop.lineno
        killed = any(
            s.name == use.name and since < s.line < use.line and s.chain[-1] in use.chain for s in stores
        )
        if not killed:
            live.add(use.name)
    if any(isinstance(n, _LOOPS) for n in outer):
        live |= assigned & _read_before_assigned(scope)
    result = frozenset(live)
    scope._dslc_live_after = result  # type: ignore[attr-defined]  # one answer per node
    return result


def _path_to(tree: ast.AST, target: ast.AST) -> list[ast.AST] | None:
    """The nodes from ``tree`` down to ``target``, ``target`` excluded."""
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
    while stack:
        node, path = stack.pop()
        for child in ast.iter_child_nodes(node):
            if child is target:
                return [*path, node]
            stack.append((child, [*path, node]))
    return None


def _uses(func: ast.AST, scope: ast.stmt, names: set[str]) -> tuple[list[_Use], list[_Use]]:
    """Loads and stores of ``names`` in ``func`` outside ``scope``, with their regions."""
    loads: list[_Use] = []
    stores: list[_Use] = []
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(func, ())]
    while stack:
        node, chain = stack.pop()
        if node is scope:
            continue
        if isinstance(node, _REGIONS):
            chain = (*chain, node)
        if isinstance(node, ast.Name) and node.id in names:
            (stores if isinstance(node.ctx, ast.Store) else loads).append(_Use(node.id, node.lineno, chain))
        stack.extend((child, chain) for child in ast.iter_child_nodes(node))
    return loads, stores


def _read_before_assigned(scope: ast.stmt) -> set[str]:
    """Names loaded on or before the line of their first store inside ``scope`` (``acc =
    f(acc)`` reads the value it had before the scope: the previous iteration's)."""
    first_store: dict[str, int] = {}
    loads: list[tuple[str, int]] = []
    for n in ast.walk(scope):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Store):
                first_store[n.id] = min(n.lineno, first_store.get(n.id, n.lineno))
            else:
                loads.append((n.id, n.lineno))
    return {name for name, line in loads if name in first_store and line <= first_store[name]}
