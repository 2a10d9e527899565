"""Front-end driver: a path (or text) -> elaborated IR graphs, or every diagnostic found."""

from __future__ import annotations

import sys
from pathlib import Path

from dsl import ast
from dsl.codes import diag
from dsl.elaborate import Elaborator
from dsl.limits import MAX_SOURCE_BYTES
from dsl.parser import parse
from dsl.sugar import lower_sugar
from lowering.ir import Graph
from lowering.passes.expand_topk import expand_topk
from lowering.source import CompileError, Span

UTF8_BOM = b"\xef\xbb\xbf"


def read_source_bytes(path: str | Path) -> bytes:
    """The bytes of a source file; every failure to read it becomes an E102 diagnostic."""
    p = Path(path)
    where = Span.whole_file(str(path))
    try:
        if p.is_dir():
            raise CompileError([diag("E102", where, "is a directory, not a source file")])
        size = p.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise CompileError(
                [diag("E102", where, f"file is too large ({size:,} bytes; at most {MAX_SOURCE_BYTES:,})")]
            )
        return p.read_bytes()
    except FileNotFoundError:
        raise CompileError([diag("E102", where, "no such file")]) from None
    except PermissionError:
        raise CompileError([diag("E102", where, "permission denied")]) from None
    except OSError as err:
        raise CompileError([diag("E102", where, f"cannot read: {err.strerror or err}")]) from None


def decode_source(data: bytes, path: str | Path) -> str:
    """Source bytes as text: UTF-8, a leading byte-order mark dropped (editors on Windows
    write one); NUL bytes or invalid UTF-8 are an E102 diagnostic at the offending byte."""
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if b"\x00" in data:
        raise CompileError(
            [diag("E102", Span.whole_file(str(path)), "binary file (contains NUL bytes), not dslc source")]
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise CompileError(
            [diag("E102", Span(str(path), line, col, line, col + 1), "not valid UTF-8 text")]
        ) from None


def read_source(path: str | Path) -> str:
    """Read a source file as UTF-8 text; every failure becomes an E102 diagnostic."""
    return decode_source(read_source_bytes(path), path)


def parse_module(text: str, file: str = "<string>") -> ast.Module:
    """Parse ``text`` and lower its sugar; E103 when it declares no layer."""
    module = lower_sugar(parse(text, file))
    if not module.layers:
        raise CompileError(
            [diag("E103", Span.whole_file(file), "no layer in this file", hint="layer name() { ... }")]
        )
    return module


def root_names(
    module: ast.Module, file: str, overrides: dict[str, int] | None, layer: str | None
) -> list[str]:
    """The layers to compile: the named one, else every layer no other layer calls."""
    elab = Elaborator(module, file, overrides)
    if elab.diagnostics:
        raise CompileError(elab.diagnostics)
    if layer is None:
        return elab.root_layers()
    if layer not in elab.layers:
        known = ", ".join(elab.layers)
        raise CompileError(
            [diag("E208", Span.whole_file(file), f"no layer named '{layer}'", hint=f"layers: {known}")]
        )
    return [layer]


def elaborate_layer(module: ast.Module, file: str, name: str, overrides: dict[str, int] | None) -> Graph:
    """Layer ``name`` elaborated at ``overrides`` and lowered (``expand_topk``); raises CompileError."""
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 10000))
        graph = Elaborator(module, file, overrides).elaborate(name)
        errors = expand_topk(graph)
    except RecursionError:
        raise CompileError([diag("E105", Span.whole_file(file), "program nests too deeply")]) from None
    finally:
        sys.setrecursionlimit(limit)
    if errors:
        raise CompileError(errors)
    return graph


def compile_text(
    text: str, file: str = "<string>", overrides: dict[str, int] | None = None, layer: str | None = None
) -> list[Graph]:
    """Parse and elaborate ``text``; returns one graph per root layer (or the named one)."""
    module = parse_module(text, file)
    graphs = []
    errors = []
    for name in root_names(module, file, overrides, layer):
        try:
            graphs.append(elaborate_layer(module, file, name, overrides))
        except CompileError as err:
            errors.extend(err.diagnostics)
    if errors:
        raise CompileError(errors)
    return graphs


def compile_file(
    path: str | Path, overrides: dict[str, int] | None = None, layer: str | None = None
) -> list[Graph]:
    return compile_text(read_source(path), str(path), overrides, layer)
