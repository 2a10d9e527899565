"""The reduction trees a golden declares, read as data: the golden is never imported or run.

A layer names its NumPy reference with ``golden "x_golden.py"``. Rule N203 compares the
trees the kernel sums with (``Graph.reductions``) against a module-level literal in that file:

    REDUCTION_TREES = {
        "mixes_raw": {"splits": "LINEAR_OK"},
        "sq_sum": {"splits": "RMS_OK", "chunks_per_split": "HC_DIM / RMS_OK / RMS_K_CHUNK"},
    }

Keys are the layer's reduced tensors (the target of the ``reduce_sum`` store, or of a
``reduction`` statement). Per tensor:

- ``splits`` (required): the partials summed across splits;
- ``chunks_per_split`` (optional): the separately rounded chunk values each split folds, in
  order, before the cross-split sum; ``{"splits": 1, "chunks_per_split": 32}`` and
  ``{"splits": 32, "chunks_per_split": 1}`` are the same flat 32-term fold;
- ``order`` (optional, default ``"ascending"``): ``"ascending"`` ((p0 + p1) + p2) + ...,
  ``"descending"`` or ``"pairwise"`` (NumPy's ``np.sum``);
- ``dtype`` (optional): the accumulator dtype of the golden's fold (``"f32"``, ``"f64"``, ...).

A count is an integer or a string holding an integer expression over the layer's parameters
and constants (``+ - * / // %``, parentheses; ``/`` divides integers as in the language), so
the declaration follows ``--set``. The file is parsed with :mod:`ast` and the value read with
:func:`ast.literal_eval`; nothing in it is executed, so the declaration must be a literal in
the named file itself (not imported from another module).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lowering.ir import DTYPES
from lowering.source import Span
from lowering.symbolic import PARAM, Bin, Const, EvalError, Expr, Sym, evaluate

NAME = "REDUCTION_TREES"
KEYS = ("splits", "chunks_per_split", "order", "dtype")
ORDERS = ("ascending", "descending", "pairwise")
GOLDEN_DTYPES = DTYPES + ("f64",)

# the integer operators of the layer language (`/` is exact integer division there too)
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "//", ast.FloorDiv: "//", ast.Mod: "%"}


class TreeError(ValueError):
    """A declaration that cannot be read (the message says what and where)."""


@dataclass(frozen=True)
class GoldenTree:
    """One tensor's tree as the golden declares it, evaluated at a parameter point."""

    tensor: str
    splits: int
    chunks: int | None
    order: str
    dtype: str | None
    span: Span  # the tensor's key in the golden file


@dataclass
class GoldenTrees:
    """What a golden file declares. ``error`` is set when the file itself cannot be read
    (missing, not Python); ``declared`` is False when it has no ``REDUCTION_TREES``."""

    path: Path
    declared: bool = False
    span: Span | None = None  # the REDUCTION_TREES assignment
    trees: dict[str, GoldenTree] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)  # tensor -> why its entry is unreadable
    malformed: str | None = None  # why REDUCTION_TREES as a whole is unreadable
    error: str | None = None


def golden_path(layer_file: str, golden: str) -> Path:
    return Path(layer_file).parent / golden


def read_golden_trees(layer_file: str, golden: str, env: Mapping[str, int]) -> GoldenTrees:
    """The trees declared by the golden of a layer, with counts evaluated in ``env``."""
    path = golden_path(layer_file, golden)
    out = GoldenTrees(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        out.error = f"cannot read {golden}: {getattr(err, 'strerror', None) or err}"
        return out
    try:
        module = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError) as err:
        out.error = f"{golden} is not valid Python: {err}"
        return out
    lines = text.splitlines()
    node = _assignment(module)
    if node is None:
        return out
    out.declared = True
    out.span = _span(path, lines, node)
    value = node.value
    try:
        literal = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        out.malformed = f"{NAME} in {golden} is not a literal (dslc reads it without running the golden)"
        return out
    if not isinstance(literal, dict) or not isinstance(value, ast.Dict):
        out.malformed = f'{NAME} in {golden} must be a dict literal {{tensor: {{"splits": ...}}}}'
        return out
    key_spans = {ast.literal_eval(k): _span(path, lines, k) for k in value.keys if k is not None}
    for tensor, entry in literal.items():
        if not isinstance(tensor, str):
            out.malformed = f"{NAME} in {golden}: keys are tensor names, got {tensor!r}"
            return out
        try:
            out.trees[tensor] = _tree(tensor, entry, env, key_spans.get(tensor, out.span))
        except TreeError as err:
            out.invalid[tensor] = f"{NAME}[{tensor!r}] in {golden}: {err}"
    return out


def _assignment(module: ast.Module) -> ast.Assign | ast.AnnAssign | None:
    """The last module-level ``REDUCTION_TREES = ...`` (or annotated) assignment."""
    found = None
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == NAME for t in stmt.targets
        ):
            found = stmt
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == NAME
            and stmt.value is not None
        ):
            found = stmt
    return found


def _span(path: Path, lines: list[str], node: ast.AST | None) -> Span:
    if node is None or not hasattr(node, "lineno"):
        return Span(str(path), 1, 1, 1, 1)
    line = node.lineno
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    col = len(text.encode("utf-8")[: node.col_offset].decode("utf-8", "replace")) + 1
    end_line = getattr(node, "end_lineno", None) or line
    end_text = lines[end_line - 1] if 0 < end_line <= len(lines) else ""
    end_offset = getattr(node, "end_col_offset", None)
    end_col = (
        len(end_text.encode("utf-8")[:end_offset].decode("utf-8", "replace")) + 1
        if end_offset is not None
        else col
    )
    return Span(str(path), line, col, end_line, end_col)


def _tree(tensor: str, entry, env: Mapping[str, int], span: Span) -> GoldenTree:
    if not isinstance(entry, dict):
        raise TreeError(f'expected a dict such as {{"splits": 4}}, got {entry!r}')
    unknown = [k for k in entry if k not in KEYS]
    if unknown:
        raise TreeError(f"unknown key {unknown[0]!r} (keys: {', '.join(KEYS)})")
    if "splits" not in entry:
        raise TreeError('"splits" is required')
    splits = _count("splits", entry["splits"], env)
    chunks = (
        _count("chunks_per_split", entry["chunks_per_split"], env) if "chunks_per_split" in entry else None
    )
    order = entry.get("order", "ascending")
    if order not in ORDERS:
        raise TreeError(f"order {order!r} is not one of {', '.join(ORDERS)}")
    dtype = entry.get("dtype")
    if dtype is not None and dtype not in GOLDEN_DTYPES:
        raise TreeError(f"dtype {dtype!r} is not one of {', '.join(GOLDEN_DTYPES)}")
    return GoldenTree(tensor, splits, chunks, order, dtype, span)


def _count(key: str, value, env: Mapping[str, int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TreeError(f"{key} must be an integer or an expression string, got {value!r}")
    n = value if isinstance(value, int) else evaluate_text(value, env)
    if n < 1:
        raise TreeError(f"{key} must be at least 1, got {n}")
    return n


def evaluate_text(text: str, env: Mapping[str, int]) -> int:
    """An integer expression over parameter and constant names, evaluated without ``eval``: read
    into a ``lowering.symbolic`` expression and evaluated as the layer's own expressions are."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise TreeError(f"{text!r} is not an integer expression") from None
    try:
        return evaluate(_expr(tree.body, text, env), env)
    except EvalError as err:
        raise TreeError(f"{text!r}: {err}") from None


def _expr(node: ast.AST, text: str, env: Mapping[str, int]) -> Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return Const(node.value)
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise TreeError(f"{text!r}: '{node.id}' is not a parameter or constant of the layer")
        return Sym(node.id, PARAM)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _expr(node.operand, text, env)
        return Bin("-", Const(0), operand) if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return Bin(_OPS[type(node.op)], _expr(node.left, text, env), _expr(node.right, text, env))
    raise TreeError(f"{text!r}: only integers, names and + - * / // % are allowed")
