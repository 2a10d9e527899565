"""The tile ops of the language: their arguments, result types and the core unit they need.

One table drives type checking, core-kind inference (a cube op makes a task `aic`, a
vector op `aiv`, both `mix`) and the code generators' op names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from lowering.body import DtypeType, ListType, ScalarType, TileType, Type
from lowering.ir import FLOAT_DTYPES, INT_DTYPES
from lowering.symbolic import Bin, Const, Expr, Sym, binop, from_poly, poly, simplify


class OpTypeError(Exception):
    """Argument types do not fit the op; ``code`` says which diagnostic to raise."""

    def __init__(self, code: str, message: str, arg: int | None = None):
        super().__init__(message)
        self.code = code
        self.arg = arg


Rule = Callable[[list[Type], dict[str, Type]], Type]


@dataclass(frozen=True)
class OpSig:
    name: str
    unit: str  # cube | vector | none
    min_args: int
    max_args: int
    flags: tuple[str, ...]  # bare identifiers accepted as boolean attributes (b_trans)
    kwargs: tuple[str, ...]
    rule: Rule


def _tile(t: Type, what: str, i: int) -> TileType:
    if not isinstance(t, TileType):
        raise OpTypeError("E303", f"{what} must be a tile, got {t}", i)
    return t


#: Definitions of the layer's ``const``s (name -> expression), set while a task body is
#: elaborated, so that ``[STATE_W - INNER_OUT]`` and ``[INNER_OUT]`` compare equal.
_CONST_DEFS: ContextVar[Mapping[str, Expr] | None] = ContextVar("dslc_const_defs", default=None)


@contextmanager
def const_definitions(defs: Mapping[str, Expr]) -> Iterator[None]:
    token = _CONST_DEFS.set(defs)
    try:
        yield
    finally:
        _CONST_DEFS.reset(token)


def _normal(e: Expr, defs: Mapping[str, Expr], depth: int = 0) -> Expr:
    """``e`` with constants replaced by their definitions, refolded and normalised bottom-up."""
    if isinstance(e, Sym) and e.name in defs and depth < 64:
        return _normal(defs[e.name], defs, depth + 1)
    if isinstance(e, Bin):
        a, b = _normal(e.a, defs, depth), _normal(e.b, defs, depth)
        if e.op in ("cdiv", "//") and isinstance(b, Sym):
            exact = _divide_by_atom(a, b, ceil=e.op == "cdiv")
            if exact is not None:
                return exact
        return simplify(binop(e.op, a, b))
    return e


def _divide_by_atom(a: Expr, k: Sym, ceil: bool) -> Expr | None:
    """``a / k`` for a stride ``k >= 1`` when ``a = k * q`` (or ``k * q + 1`` rounding up): the
    extent of a strided slice ``x : x + k * (n - 1) + 1 : k`` is ``n``."""
    form = poly(a)
    if form is None:
        return None
    quotient: dict = {}
    rest = 0
    for mono, coeff in form.items():
        if k in mono:
            i = mono.index(k)
            quotient[mono[:i] + mono[i + 1 :]] = coeff
        elif mono == ():
            rest = coeff
        else:
            return None
    if rest == 0 or (rest == 1 and ceil):
        return simplify(binop("+", from_poly(quotient), Const(rest)))
    return None


def _same_shape(a: tuple[Expr, ...], b: tuple[Expr, ...]) -> bool:
    """Shapes agree for every parameter value: equal as expressions once constants are expanded."""
    if len(a) != len(b):
        return False
    defs = _CONST_DEFS.get() or {}
    return all(
        x == y or simplify(x) == simplify(y) or _normal(x, defs) == _normal(y, defs)
        for x, y in zip(a, b, strict=True)
    )


def shape_text(shape: tuple[Expr, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _unary(args, kw):
    return _tile(args[0], "operand", 0) if isinstance(args[0], TileType) else args[0]


def _float_unary(args, kw):
    t = args[0]
    dtype = t.dtype if isinstance(t, (TileType, ScalarType)) else None
    if dtype not in FLOAT_DTYPES:
        raise OpTypeError("E302", f"operand must be floating point, got {dtype}; use cast()", 0)
    return t


def elementwise(a: Type, b: Type) -> Type:
    """Result of a binary elementwise op; scalars broadcast over tiles, no dtype promotion."""
    if isinstance(a, TileType) and isinstance(b, TileType):
        if a.dtype != b.dtype:
            raise OpTypeError("E302", f"dtype mismatch: {a.dtype} and {b.dtype}; use cast()")
        if not _same_shape(a.shape, b.shape):
            raise OpTypeError("E303", f"shape mismatch: {shape_text(a.shape)} and {shape_text(b.shape)}")
        return a
    if isinstance(a, TileType) and isinstance(b, ScalarType):
        return a
    if isinstance(b, TileType) and isinstance(a, ScalarType):
        return b
    if isinstance(a, ScalarType) and isinstance(b, ScalarType):
        if a.dtype in FLOAT_DTYPES or b.dtype in FLOAT_DTYPES:
            return ScalarType(a.dtype if a.dtype in FLOAT_DTYPES else b.dtype)
        return a
    raise OpTypeError("E303", f"cannot combine {a} and {b}")


def _binary(args, kw):
    return elementwise(args[0], args[1])


def _dims_arg(t: Type, i: int) -> int:
    if not isinstance(t, ListType):
        raise OpTypeError("E306", "expected a shape list such as [16, 32]", i)
    return t.length


def _fill(args, kw):
    # zeros(dtype, [shape]) / full(dtype, [shape], value): the shape comes in via kw["_shape"].
    if not isinstance(args[0], DtypeType):
        raise OpTypeError("E306", "first argument must be a dtype such as f32", 0)
    _dims_arg(args[1], 1)
    return kw["_result"]


def _matmul(args, kw):
    a, b = _tile(args[0], "left operand", 0), _tile(args[1], "right operand", 1)
    if a.dtype != b.dtype:
        raise OpTypeError("E302", f"matmul operands differ in dtype: {a.dtype} and {b.dtype}", 1)
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise OpTypeError("E303", "matmul operands must be 2-D tiles")
    m, k = (a.shape[1], a.shape[0]) if "a_trans" in kw else (a.shape[0], a.shape[1])
    k2, n = (b.shape[1], b.shape[0]) if "b_trans" in kw else (b.shape[0], b.shape[1])
    if simplify(k) != simplify(k2):
        raise OpTypeError("E303", f"matmul inner dimensions differ: {k} and {k2}", 1)
    if "k_group" in kw:
        group = getattr(kw["k_group"], "expr", None)
        if not isinstance(group, Const) or group.value < 1:
            raise OpTypeError("E309", "k_group must be a positive integer constant")
        if isinstance(k, Const) and k.value % group.value:
            raise OpTypeError("E303", f"the inner dimension {k} is not a multiple of k_group={group.value}")
    out = "i32" if a.dtype in INT_DTYPES else "f32"
    return TileType(out, (m, n))


def _matmul_acc(args, kw):
    acc = _tile(args[0], "accumulator", 0)
    prod = _matmul(args[1:], kw)
    if acc.dtype != prod.dtype:
        raise OpTypeError("E302", f"accumulator is {acc.dtype} but the product is {prod.dtype}", 0)
    if not _same_shape(acc.shape, prod.shape):
        raise OpTypeError(
            "E303", f"accumulator {shape_text(acc.shape)} != product {shape_text(prod.shape)}", 0
        )
    return acc


def _reduce_rows(args, kw):
    t = _tile(args[0], "operand", 0)
    return TileType(t.dtype, (*t.shape[:-1], Const(1)))


def _reduce_cols(args, kw):
    t = _tile(args[0], "operand", 0)
    return TileType(t.dtype, (Const(1), *t.shape[1:]))


def _expand(args, kw):
    x = _tile(args[0], "operand", 0)
    _tile(args[1], "broadcast operand", 1)
    if args[1].dtype != x.dtype:
        raise OpTypeError("E302", f"dtype mismatch: {x.dtype} and {args[1].dtype}", 1)
    return x


def _col_expand(args, kw):
    """x op row, broadcasting a [1, N] row over the rows of an [M, N] tile (pl.col_expand_*)."""
    x = _tile(args[0], "operand", 0)
    row = _tile(args[1], "broadcast row", 1)
    if row.dtype != x.dtype:
        raise OpTypeError("E302", f"dtype mismatch: {x.dtype} and {row.dtype}", 1)
    if len(x.shape) != 2 or len(row.shape) != 2 or simplify(row.shape[0]) != Const(1):
        raise OpTypeError(
            "E303", f"the broadcast operand must be a [1, N] row, got {shape_text(row.shape)}", 1
        )
    if simplify(row.shape[1]) != simplify(x.shape[1]):
        raise OpTypeError(
            "E303", f"row {shape_text(row.shape)} does not match the columns of {shape_text(x.shape)}", 1
        )
    return x


def _transpose(args, kw):
    x = _tile(args[0], "operand", 0)
    if len(x.shape) != 2:
        raise OpTypeError("E303", "transpose takes a 2-D tile", 0)
    return TileType(x.dtype, (x.shape[1], x.shape[0]))


def _gather_rows(args, kw):
    """gather_rows(src, rows): out[i] = src[rows[i]] (pl.gather_row); a negative row gives zeros."""
    src = _tile(args[0], "source", 0)
    idx = _tile(args[1], "row index", 1)
    if idx.dtype not in INT_DTYPES:
        raise OpTypeError("E302", "the row index must be an integer tile", 1)
    if len(src.shape) != 2 or len(idx.shape) != 2:
        raise OpTypeError("E303", "gather_rows takes a 2-D source and a [1, N] index row")
    if simplify(idx.shape[0]) != Const(1):
        raise OpTypeError("E303", f"the row index must be one row [1, N], got {shape_text(idx.shape)}", 1)
    return TileType(src.dtype, (idx.shape[1], src.shape[1]))


def _cast(args, kw):
    if not isinstance(args[1], DtypeType):
        raise OpTypeError("E306", "second argument of cast must be a dtype", 1)
    target = kw["_dtype"]
    t = args[0]
    if isinstance(t, TileType):
        return TileType(target, t.shape)
    return ScalarType(target)


def _sort32(args, kw):
    v = _tile(args[0], "values", 0)
    if v.dtype != "f32":
        raise OpTypeError("E302", "sort32 sorts f32 values", 0)
    if len(v.shape) != 2 or v.shape[0] != Const(1):
        raise OpTypeError("E303", "sort32 needs a single row [1, N]", 0)
    return TileType("f32", (Const(1), binop("*", Const(2), v.shape[1])))


def _mrgsort(args, kw):
    s = _tile(args[0], "sorted pairs", 0)
    if not isinstance(args[1], ScalarType) or args[1].dtype not in INT_DTYPES:
        raise OpTypeError("E309", "block_len must be an integer", 1)
    return s


def _topk_pairs(args, kw):
    s = _tile(args[0], "sorted pairs", 0)
    k = kw.get("_k")
    return TileType(s.dtype, (Const(1), k if k is not None else s.shape[1]))


def _valid(args, kw):
    # valid(x, cols) / valid(x, rows, cols): PyPTO's set_validshape. Only the leading region is
    # meaningful; the tail is padding whose content is unspecified. The type is unchanged.
    x = _tile(args[0], "operand", 0)
    if len(args) == 3 and len(x.shape) < 2:
        raise OpTypeError("E303", "valid(x, rows, cols) needs a 2-D tile", 0)
    for i, t in enumerate(args[1:], start=1):
        if not isinstance(t, ScalarType) or t.dtype not in INT_DTYPES:
            raise OpTypeError("E309", "valid extents are integers", i)
    return x


def _fillpad(args, kw):
    # fillpad(x, cols, value): valid(x, cols) plus the tail filled with `value` (-inf before a
    # sort or a row_max), so the tail is defined and loses every comparison.
    x = _tile(args[0], "operand", 0)
    if not isinstance(args[1], ScalarType) or args[1].dtype not in INT_DTYPES:
        raise OpTypeError("E309", "the valid extent is an integer", 1)
    if not isinstance(args[2], ScalarType):
        raise OpTypeError("E303", "the pad value is a scalar", 2)
    return x


def _topk(args, kw):
    """``topk(row, k, valid=n)``: the k best (value, index) records of a [1, W] f32 row."""
    row = _tile(args[0], "row", 0)
    if row.dtype != "f32" or len(row.shape) != 2 or row.shape[0] != Const(1):
        raise OpTypeError("E303", "topk takes one f32 row [1, W]", 0)
    if not isinstance(args[1], ScalarType) or args[1].dtype not in INT_DTYPES:
        raise OpTypeError("E309", "k must be an integer", 1)
    valid = getattr(kw.get("valid"), "type", None)  # options arrive as IR values
    if "valid" in kw and (not isinstance(valid, ScalarType) or valid.dtype not in INT_DTYPES):
        raise OpTypeError("E309", "valid= must be an integer count")
    return TileType("f32", (Const(1), kw["_k"]))


def _gather(args, kw):
    x = _tile(args[0], "source", 0)
    idx = _tile(args[1], "index", 1)
    if idx.dtype not in INT_DTYPES:
        raise OpTypeError("E302", "gather index must be an integer tile", 1)
    return TileType(x.dtype, idx.shape)


def _lanes(args, kw):
    x = _tile(args[0], "operand", 0)
    return TileType(kw.get("_dtype", x.dtype), (x.shape[0], binop("//", x.shape[1], Const(2))))


def _read(args, kw):
    t = args[0]
    if not isinstance(t, ScalarType):
        raise OpTypeError("E304", "read() takes one element: index every dimension", 0)
    return t


def _scalar_int(args, kw):
    for i, t in enumerate(args):
        if not isinstance(t, ScalarType) or t.dtype not in INT_DTYPES:
            raise OpTypeError("E309", "min/max/cdiv take integers; use minimum/maximum for tiles", i)
    return ScalarType("i32")


def _select(args, kw):
    return elementwise(args[1], args[2])


_V, _C, _N = "vector", "cube", "none"

SIGNATURES: dict[str, OpSig] = {
    s.name: s
    for s in [
        OpSig("zeros", _N, 2, 2, (), (), _fill),
        OpSig("full", _N, 3, 3, (), (), _fill),
        # k_group=G: the A2/A3 cube's fp32 accumulation order (groups of G consecutive k summed
        # exactly, one fp32 rounding per group, ascending k), bit for bit; default: unspecified.
        OpSig("matmul", _C, 2, 2, ("a_trans", "b_trans"), ("k_group",), _matmul),
        OpSig("matmul_acc", _C, 3, 3, ("a_trans", "b_trans"), ("k_group",), _matmul_acc),
        *[
            OpSig(n, _V, 1, 1, (), (), _float_unary)
            for n in ("exp", "log", "sqrt", "rsqrt", "recip", "sigmoid", "silu")
        ],
        *[OpSig(n, _V, 1, 1, (), (), _unary) for n in ("relu", "abs", "neg")],
        *[OpSig(n, _V, 2, 2, (), (), _binary) for n in ("maximum", "minimum")],
        *[OpSig(n, _V, 1, 1, (), (), _reduce_rows) for n in ("row_sum", "row_max", "row_min")],
        *[OpSig(n, _V, 1, 1, (), (), _reduce_cols) for n in ("col_sum", "col_max")],
        *[
            OpSig(n, _V, 2, 2, (), (), _expand)
            for n in (
                "row_expand_mul",
                "row_expand_div",
                "row_expand_sub",
                "row_expand_add",
                "col_expand_mul",
            )
        ],
        *[
            OpSig(n, _V, 2, 2, (), (), _col_expand)
            for n in ("col_expand_add", "col_expand_sub", "col_expand_div")
        ],
        OpSig("transpose", _V, 1, 1, (), (), _transpose),
        OpSig("gather_rows", _V, 2, 2, (), (), _gather_rows),
        OpSig("cast", _V, 2, 2, (), ("mode",), _cast),
        OpSig("sort32", _V, 2, 2, (), (), _sort32),
        OpSig("mrgsort", _V, 2, 2, (), (), _mrgsort),
        OpSig("topk_pairs", _V, 2, 2, (), (), _topk_pairs),
        OpSig("topk", _V, 2, 2, (), ("valid",), _topk),
        OpSig("valid", _N, 2, 3, (), (), _valid),
        OpSig("fillpad", _V, 3, 3, (), (), _fillpad),
        OpSig("gather", _V, 2, 2, (), (), _gather),
        OpSig("even_lanes", _V, 1, 1, (), (), _lanes),
        OpSig("odd_lanes", _V, 1, 1, (), (), _lanes),
        OpSig("select", _V, 3, 3, (), (), _select),
        OpSig("read", _N, 1, 1, (), (), _read),
        OpSig("min", _N, 2, 2, (), (), _scalar_int),
        OpSig("max", _N, 2, 2, (), (), _scalar_int),
        OpSig("cdiv", _N, 2, 2, (), (), _scalar_int),
    ]
}
