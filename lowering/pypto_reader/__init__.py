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

import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from lowering.ir import Graph
from lowering.perf import paused_gc
from lowering.pypto_reader import read_context
from lowering.pypto_reader.constants import Params, check_params
from lowering.pypto_reader.graph import build_graphs
from lowering.pypto_reader.modules import MAX_MODULE_BYTES, Loader
from lowering.pypto_reader.notes import INPUT_ERRORS, READER_CODES, Notes, strict
from lowering.source import Diagnostic, Span

__all__ = ["INPUT_ERRORS", "READER_CODES", "ReadResult", "looks_like_pypto", "read_pypto", "strict"]


@dataclass
class ReadResult:
    graphs: list[Graph] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    text: str = ""


def looks_like_pypto(text: str) -> bool:
    """A cheap textual test used when searching directories: does it import pypto.language?"""
    return "pypto.language" in text or "from pypto import language" in text


def read_pypto(
    path: str | Path,
    text: str | None = None,
    overrides: dict[str, int] | None = None,
    layer: str | None = None,
) -> ReadResult:
    """Read a PyPTO file (``text`` if given, else from ``path``) into IR graphs and notes."""
    file = str(path)
    notes = Notes()
    result = ReadResult()
    where = Span.whole_file(file)
    if text is None:
        try:
            p = Path(path)
            if p.stat().st_size > MAX_MODULE_BYTES:
                notes.add("P003", where, "file is too large")
                return _done(result, notes)
            data = p.read_bytes()
        except OSError as err:
            notes.add("P003", where, f"cannot read: {err.strerror or err}")
            return _done(result, notes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            notes.add("P003", where, "not valid UTF-8 text")
            return _done(result, notes)
    result.text = text
    overrides = dict(overrides or {})
    with paused_gc():  # a read builds tens of thousands of tasks that all stay alive
        for _ in range(2):  # a second read when --set named a constant that renames a parameter
            params = Params(overrides=dict(overrides))
            attempt = ReadResult(text=text)
            _read(Path(file), text, params, Notes(), attempt, layer)
            extra = {k: v for k, v in params.redirects.items() if k not in overrides}
            if not extra:
                return attempt
            overrides.update(extra)
    return attempt


def _read(path: Path, text: str, params: Params, notes: Notes, result: ReadResult, layer: str | None) -> None:
    file = str(path)
    where = Span.whole_file(file)
    loader = Loader(notes, params)
    limit = sys.getrecursionlimit()
    token = read_context.begin_read(file)
    try:
        sys.setrecursionlimit(max(limit, 10000))
        try:
            module = loader.load_text(path, text)
        except SyntaxError as err:
            line = err.lineno or 1
            col = err.offset or 1
            notes.add("P003", Span(file, line, col, line, col + 1), f"Python syntax error: {err.msg}")
            return
        except ValueError as err:  # e.g. NUL bytes
            notes.add("P003", where, f"cannot parse: {err}")
            return
        if not module.is_pypto:
            notes.add("P002", where, "does not import pypto.language: not a PyPTO file, nothing to check")
            return
        loader.run_main(module)
        result.graphs = build_graphs(module, params, notes, loader, layer)
        if not result.graphs:
            what = f"no entry named '{layer}'" if layer else "no @pl.jit, @pl.jit.inline or @pl.program entry"
            notes.add("P002", where, f"{what}: no task graph to check")
        check_params(params, notes, file)
    except RecursionError:
        notes.add("P004", where, "the program nests too deeply to read")
    except Exception as err:  # noqa: BLE001 - the last line of defence: never a traceback
        notes.add(
            "P004",
            where,
            f"the reader failed ({type(err).__name__}: {err})",
            trace="".join(traceback.format_exception(err)),
        )
    finally:
        read_context.end_read(token)
        sys.setrecursionlimit(limit)
        result.diagnostics = sorted(notes.items, key=Diagnostic.sort_key)


def _done(result: ReadResult, notes: Notes) -> ReadResult:
    result.diagnostics = sorted(notes.items, key=Diagnostic.sort_key)
    return result
