"""The tensors of a program being read: parameters, ``pl.create_tensor`` buffers and views.

Their IR kind follows the DSL's declarations: a plain parameter is ``input``, ``pl.Out[...]``
``output``, ``pl.InOut[...]`` ``inout``, a ``pl.create_tensor`` buffer ``scratch`` (with its
``manual_dep``), a ``pld.DistributedTensor`` a ``window`` -- or a ``signal`` once a notify or
wait uses it. ``pl.reshape`` of a tensor is a separate IR tensor that views the same bytes
(``Tensor.view_of``); edge inference keys both by the base buffer, as the runtime's tensor map
does. A tile that a later scope uses is a buffer its producing task allocates
(``Tensor.created_by``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lowering import ir
from lowering.source import Span
from lowering.symbolic import EvalError, Expr, Sym, evaluate


@dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[Expr, ...] | None  # None: not annotated (a bare pl.Tensor)
    kind: str
    manual_dep: bool
    span: Span
    distributed: bool = False
    declared_inout: bool = False  # an InOut parameter of the entry (R-enclosing)
    view_of: str | None = None
    view_offset: int = 0
    view_placed: bool = True  # False: where the view starts is unknown (view_offset is 0)
    init_value: float | None = None
    created_by: str | None = None  # the task that allocates it (a tile living past its scope)


class TensorTable:
    """Tensors by IR name, in declaration order; names are made unique on collision."""

    def __init__(self) -> None:
        self.infos: dict[str, TensorInfo] = {}

    def add(self, info: TensorInfo) -> TensorInfo:
        name, k = info.name, 2
        while name in self.infos:
            name = f"{info.name}#{k}"
            k += 1
        info.name = name
        self.infos[name] = info
        return info

    def get(self, name: str) -> TensorInfo | None:
        return self.infos.get(name)

    def base(self, name: str) -> str:
        """The buffer whose bytes ``name`` names: itself, or the end of its chain of views."""
        seen: set[str] = set()
        info = self.infos.get(name)
        while info is not None and info.view_of is not None and info.name not in seen:
            seen.add(info.name)
            name = info.view_of
            info = self.infos.get(name)
        return name

    def build(
        self, env: dict[str, int], signals: set[str], windows: set[str], ranks: dict[str, int]
    ) -> dict[str, ir.Tensor]:
        """IR tensors; ``ranks`` gives the rank of unannotated tensors (from their accesses)."""
        out: dict[str, ir.Tensor] = {}
        for info in self.infos.values():
            kind = info.kind
            if info.name in signals:
                kind = "signal"
            elif info.distributed or (info.name in windows and kind == "scratch"):
                kind = "window"
            dtype = "i32" if kind == "signal" else info.dtype
            if info.shape is None:
                shape: tuple[Expr, ...] = tuple(
                    Sym("?", "dynamic") for _ in range(max(ranks.get(info.name, 1), 1))
                )
            else:
                shape = info.shape
            dims: list[int | None] = []
            for d in shape:
                try:
                    dims.append(max(1, evaluate(d, env)))
                except EvalError:
                    dims.append(None)
            extra = {
                "view_of": info.view_of,
                "view_offset": info.view_offset,
                "view_placed": info.view_placed,
                "init_value": info.init_value,
                "created_by": info.created_by,
            }
            out[info.name] = ir.Tensor(
                info.name, dtype, tuple(shape), tuple(dims), kind, info.manual_dep, info.span, **extra
            )
        return out
