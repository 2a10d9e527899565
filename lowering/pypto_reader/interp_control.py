"""How interpreted code stops early: the bounds of a read and the signals that unwind statements.

A read is bounded so that no model file can make the lint slow or hang it: ``MAX_STEPS``
statements per read, counted in a :class:`Budget` that every interpreter of the read shares
(past it, :class:`BudgetExceeded` unwinds the whole read), ``MAX_DEPTH`` calls deep, and
``HOST_LOOP_STEPS`` statements for one loop of host code. ``return``, ``break`` and
``continue`` are exceptions (:class:`Return`, :class:`Break`, :class:`Continue`) that the call
or loop they leave catches, so a statement nested at any depth can leave its block.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from lowering.pypto_reader.values import Val

MAX_STEPS = 400_000  # statements interpreted per read of a file
MAX_DEPTH = 48  # nested calls
HOST_LOOP_STEPS = 20_000  # statements one loop of host code may take before it is abandoned


class BudgetExceeded(BaseException):  # noqa: N818 - a bound, not an error; BaseException so no handler eats it
    """The read has interpreted ``MAX_STEPS`` statements."""


class Return(Exception):  # noqa: N818 - control flow
    def __init__(self, value: Val):
        self.value = value


class Break(Exception):  # noqa: N818 - control flow
    pass


class Continue(Exception):  # noqa: N818 - control flow
    pass


@dataclass
class Budget:
    """Statements interpreted so far in this read (shared by every interpreter of the read)."""

    steps: int = 0
    limit: int = MAX_STEPS
    hit_at: ast.AST | None = None
