"""Constructs that make bug classes unwritable, lowered on the AST before elaboration.

Each module rewrites one construct into plain language, so every later stage (checks,
edges, code generators, the PyPTO emitter) sees only the lowered graph:

- ``reduce_sum``: split-K accumulation -> disjoint per-split partials + an ascending reduce
  (no zero seed, no atomics: docs/runtime-semantics.md §17).
"""

from __future__ import annotations

from dsl import ast
from dsl.sugar.reduce_sum import lower_reduce_sums


def lower_sugar(module: ast.Module) -> ast.Module:
    return lower_reduce_sums(module)
