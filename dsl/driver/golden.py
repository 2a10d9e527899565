"""A layer's golden module: loading it, calling it, and checking that what it returns fits the layer.

The contract (``docs/golden.md``): a module beside the layer, named by ``golden "x.py"``, with

    def make_inputs(params: dict, seed: int, ranks: int) -> dict | list[dict]   # optional
    def golden(inputs: list[dict], params: dict) -> dict | list[dict]           # per rank
    TOLERANCES = {"out": {"comparator": "allclose", "atol": 1e-3, "rtol": 1e-3}}  # optional

A golden is the user's code: when it raises, or returns names, shapes or ranks that do not
match the layer, that is a mistake in the golden, reported as :class:`GoldenError` (E109)
at the golden file -- at the line that raised when there is one -- naming the function and
the tensor. It is never reported as an internal error of dslc.
"""

from __future__ import annotations

import importlib.util
import inspect
import linecache
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dsl.driver.diagnostics import diag
from lowering.source import Diagnostic, Span
from runtime import compare

DEFAULT_TOLERANCE = {"comparator": "allclose", "atol": 1e-3, "rtol": 1e-3}
COMPARATORS = tuple(n for n in compare.__all__ if n not in ("Comparison", "paired_values"))


@dataclass(frozen=True)
class Declared:
    """A tensor of the layer as the golden sees it: its kind, DSL dtype and concrete shape."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]

    def text(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


class GoldenError(ValueError):
    """The golden module fails or does not fit the layer (E109 at the golden file)."""

    def __init__(self, path: Path, message: str, line: int = 0, hint: str | None = None):
        super().__init__(f"{path}: {message}")
        self.path, self.message, self.line, self.hint = path, message, line, hint

    def diagnostic(self) -> Diagnostic:
        if not self.line:
            return diag("E109", Span.whole_file(str(self.path)), self.message, hint=self.hint)
        text = linecache.getline(str(self.path), self.line)
        col = len(text) - len(text.lstrip()) + 1  # the statement, not its indentation
        end = max(len(text.rstrip()) + 1, col + 1)
        return diag(
            "E109", Span(str(self.path), self.line, col, self.line, end), self.message, hint=self.hint
        )


def _line_in(tb, path: Path) -> int:
    """The last line of ``path`` in a traceback (the golden's own line that failed)."""
    line = 0
    for frame in traceback.extract_tb(tb):
        if Path(frame.filename).resolve() == path:
            line = frame.lineno or 0
    return line


def load(path: Path) -> ModuleType:
    """Import the golden module at ``path`` (a GoldenError if it does not import)."""
    spec = importlib.util.spec_from_file_location(f"dslc_golden_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise GoldenError(path, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise GoldenError(path, f"does not parse: {err.msg}", err.lineno or 0) from err
    except Exception as err:  # noqa: BLE001 - the user's module: report what it raised
        raise GoldenError(
            path, f"raised {type(err).__name__} on import: {err}", _line_in(err.__traceback__, path)
        ) from err
    return module


def call(path: Path, what: str, fn: Callable, *args: Any) -> Any:
    """``fn(*args)``; whatever it raises becomes a GoldenError at the golden's failing line."""
    try:
        return fn(*args)
    except MemoryError as err:
        raise GoldenError(path, f"{what} ran out of memory ({err or 'MemoryError'})") from err
    except Exception as err:  # noqa: BLE001 - the user's function: report what it raised
        line = _line_in(err.__traceback__, path)
        raise GoldenError(path, f"{what} raised {type(err).__name__}: {err}", line) from err


def per_rank(path: Path, what: str, value: Any, ranks: int) -> list[dict]:
    """A dict (the same for every rank) or a list of one dict per rank."""
    if isinstance(value, dict):
        return [value] + [dict(value) for _ in range(ranks - 1)]
    if isinstance(value, list | tuple) and all(isinstance(v, dict) for v in value):
        if len(value) != ranks:
            raise GoldenError(
                path, f"{what} returned {len(value)} per-rank dicts; the run has {ranks} rank(s)"
            )
        return [dict(v) for v in value]
    raise GoldenError(
        path, f"{what} returned {type(value).__name__}; it must return a dict, or a list of one dict per rank"
    )


def check_inputs(path: Path, given: list[dict], tensors: dict[str, Declared], scalars: set[str]) -> None:
    """Inputs from ``make_inputs`` name the layer's inputs with the declared shapes."""
    wanted = {n: t for n, t in tensors.items() if t.kind in ("input", "inout")}
    for rank, per in enumerate(given):
        for name, value in per.items():
            if name in scalars:
                continue
            t = tensors.get(name)
            if t is None:
                known = ", ".join(sorted(wanted) + sorted(scalars)) or "none"
                raise GoldenError(
                    path,
                    f"make_inputs gave rank {rank} {name!r}, which the layer does not declare (inputs: {known})",
                )
            shape = tuple(np.shape(value))
            if shape != t.shape:
                raise GoldenError(
                    path,
                    f"make_inputs gave rank {rank} {name!r} with shape {shape}; the layer declares {t.text()}",
                )
        missing = [n for n in wanted if n not in per]
        if missing:
            t = wanted[missing[0]]
            raise GoldenError(
                path, f"make_inputs gave rank {rank} no {t.kind} {t.name!r} (the layer declares {t.text()})"
            )


def check_outputs(
    path: Path, expected: list[dict], outputs: list[dict], tensors: dict[str, Declared]
) -> None:
    """Outputs of ``golden`` name outputs the kernels produce, with the same shapes, and there
    is at least one (a golden that returns only empty dicts would check nothing)."""
    if not any(expected):
        known = ", ".join(sorted({n for got in outputs for n in got})) or "none"
        raise GoldenError(
            path, f"golden returned no outputs for any rank, so nothing would be checked (outputs: {known})"
        )
    for rank, (want, got) in enumerate(zip(expected, outputs, strict=False)):
        for name, value in want.items():
            if name not in got:
                known = ", ".join(sorted(got)) or "none"
                t = tensors.get(name)
                what = "is not a tensor of the layer" if t is None else f"is {t.kind}, not an output"
                raise GoldenError(
                    path, f"golden returned {name!r} for rank {rank}, which {what} (outputs: {known})"
                )
            shape = tuple(np.shape(value))
            if shape != tuple(np.shape(got[name])):
                raise GoldenError(
                    path,
                    f"golden returned {name!r} for rank {rank} with shape {shape}, but the kernel's output is "
                    f"{tensors[name].text()}: the shapes differ",
                )


def tolerance(path: Path, tolerances: Any, name: str) -> Any:
    """The tolerance of output ``name``: a comparator spec or a callable."""
    if not isinstance(tolerances, dict):
        raise GoldenError(
            path, f"TOLERANCES is a {type(tolerances).__name__}; it must be a dict of output names"
        )
    spec = tolerances.get(name, DEFAULT_TOLERANCE)
    if callable(spec):
        return spec
    if not isinstance(spec, dict):
        raise GoldenError(path, f"TOLERANCES[{name!r}] must be a dict or a callable")
    comparator = spec.get("comparator", "allclose")
    if comparator not in COMPARATORS:
        raise GoldenError(
            path, f"TOLERANCES[{name!r}] names comparator {comparator!r}; one of {', '.join(COMPARATORS)}"
        )
    return spec


def compare_output(path: Path, name: str, spec, actual: np.ndarray, expected: np.ndarray, context: dict):
    """Compare one output with its tolerance (a callable's failure is the golden's)."""
    if callable(spec):
        try:
            takes_context = len(inspect.signature(spec).parameters) >= 3
        except (TypeError, ValueError):
            takes_context = False
        args = (actual, expected, context) if takes_context else (actual, expected)
        result = call(path, f"the tolerance of {name!r}", spec, *args)
        if not isinstance(result, compare.Comparison):
            raise GoldenError(
                path, f"the tolerance of {name!r} returned {type(result).__name__}, not a Comparison"
            )
        return result
    kwargs = dict(spec)
    fn = getattr(compare, kwargs.pop("comparator", "allclose"))
    return call(path, f"TOLERANCES[{name!r}]", lambda: fn(actual, expected, **kwargs))
