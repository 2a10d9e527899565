"""``read_pypto``: one PyPTO file -> IR graphs and the reader's notes (see the package docs)."""

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
from lowering.pypto_reader.notes import Notes
from lowering.source import Diagnostic, Span


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
