"""The PyPTO reader: a PyPTO model file -> the same task-graph IR a DSL layer elaborates to.

``read_pypto(path)`` parses the file with ``ast`` -- it never imports or executes it -- and
recovers, for each entry (``@pl.jit`` or a ``@pl.program`` orchestration), the tasks
(``pl.at``/``pl.spmd`` scopes, kernel calls), their flags, grids, explicit deps, accesses,
signals, barriers and atomics; then it infers the edges exactly as for a DSL layer
(``lowering.edges``). The lint rules run on the result unchanged and point at ``.py`` lines.

It never raises: unreadable input is a P003 diagnostic, a failure inside the reader P004,
and a construct it cannot model a P001 note saying what it means for the verdict.

Modules, one concern each: ``modules`` (files, imports, module level), ``constants``
(parameters, config and argv values, admissible sets), ``guards`` (request checks and
runtime-scalar ranges of ``build_tensor_specs``), ``exprs`` (the expression evaluator),
composing ``exprs_static`` (a value's static value, truth and items), ``exprs_arithmetic``,
``exprs_comparisons``, ``exprs_displays`` (tuples, lists, sets, dicts, comprehensions,
f-strings), ``exprs_subscripts``, ``exprs_attributes`` and ``exprs_calls``; ``interp`` (the
Python interpreter), composing ``interp_frames`` (frames, names, assignment targets),
``interp_statements`` (straight-line statements), ``interp_control_flow`` (branches, loops,
exceptions), ``interp_definitions`` (functions, classes, calls of them) and ``interp_control``
(the bounds of a read, control-flow signals), ``orchestration`` (the orchestration
interpreter: statements, loops, inline calls), composing ``orchestration_calls`` (the ``pl.*`` calls: views, task-id arrays,
submits), ``scopes`` (the task builder: scopes, kernel calls, deps, flags) and
``task_bodies`` (reading, caching and splicing task bodies); ``program`` (what one entry
builds); a task body is read by ``kernel`` (its expressions), composing ``kernel_names`` (name
resolution), ``kernel_body`` (the IR body, loops, conditions), ``accesses`` (the access
recorder) and ``kernel_statements`` (the statement walker), with ``memory`` (regions of
loads, stores, subscripts) and ``ops`` / ``sorting`` / ``signals`` (tile ops, sort
chains and valid extents, cross-rank signals), ``directions`` (parameter directions and Out
-> InOut promotion), ``tensors``, ``values``, ``graph`` (entries, ranks, the IR graph) and
``notes`` (the P00x codes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering.pypto_reader.notes import INPUT_ERRORS, READER_CODES, strict

if TYPE_CHECKING:
    from lowering.pypto_reader.read import ReadResult, looks_like_pypto, read_pypto

__all__ = ["INPUT_ERRORS", "READER_CODES", "ReadResult", "looks_like_pypto", "read_pypto", "strict"]

_READ = frozenset({"ReadResult", "looks_like_pypto", "read_pypto"})


def __getattr__(name: str):
    """The reader itself is imported when first asked for: ``dslc check`` on DSL files (and
    ``dslc explain``, which lists the reader's codes) never loads its fifty modules."""
    if name in _READ:
        from lowering.pypto_reader import read

        return getattr(read, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
