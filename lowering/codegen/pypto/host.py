"""The host side of an emitted PyPTO module: the ``@pl.jit.host`` driver and the specs.

A layer over several ranks gets an ``l3_<layer>`` driver that allocates its windows with
``pld.alloc_window_buffer`` and runs one chip program per rank (``device=r``; the reader
takes the rank count and the rank parameter from it). ``build_tensor_specs`` checks a request
as pypto-lib model files do: the ranges of the runtime scalars, then the layer's ``guard``s
with its derived scalars named again, before it builds the ``TensorSpec`` list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering.codegen.pypto.text import (
    EMITTED,
    IDENTIFIER,
    LINE_LENGTH,
    Cat,
    Doc,
    call,
    int_text,
    layout,
    lst,
    paren,
    py_str,
)
from lowering.codegen.pypto.values import dtype_name
from lowering.symbolic import SCALAR, Bin, Expr, Sym, free_symbols

if TYPE_CHECKING:
    from lowering.codegen.pypto.emit import _Emitter

TORCH_DTYPES = {
    "f32": "torch.float32",
    "f16": "torch.float16",
    "bf16": "torch.bfloat16",
    "i8": "torch.int8",
    "u8": "torch.uint8",
    "i16": "torch.int16",
    "i32": "torch.int32",
    "u32": "torch.int64",
    "i64": "torch.int64",
    "bool": "torch.bool",
}


class HostWriter:
    """The host side of a PyPTO module: the request specs and their checks, the distributed host
    driver and the window buffers it allocates, for the module ``em`` writes
    (``lowering.codegen.pypto.emit._Emitter``, which holds the names)."""

    def __init__(self, em: _Emitter) -> None:
        self.em = em
        self.host_temps = 0  # the host's hoisted integer temporaries, `_g<n>`

    # ---------------------------------------------------------------- host-side request checks
    def spec_def(self) -> list[str]:
        items: list[Doc] = []
        for s in self.em.graph.scalars.values():
            d = s.domain
            default = (d.values[0] if d.values else d.lo) if d is not None else 1
            items.append(f"{self.em.py(s.name)}={default}")
        return layout(Cat(["def build_tensor_specs", paren(items), ":"]), 0)

    def spec_lines(self) -> list[str]:
        lines = []
        for s in self.specs():
            args: list[Doc] = [s["name"], lst([self.em.mod(d) for d in s["dims"]]), s["dtype"]]
            kw: dict[str, Doc] = {"is_output": "True"} if s["output"] else {}
            lines.extend(layout(Cat([call("TensorSpec", *args, **kw), ","]), 2))
        return lines

    def spec_checks(self) -> list[str]:
        """Scalar ranges and guards of the layer, as pypto-lib's build_tensor_specs checks them."""
        g = self.em.graph
        lines: list[str] = []
        for s in g.scalars.values():
            d, name = s.domain, self.em.py(s.name)
            if d is None:
                continue
            if d.values is not None:
                values = ", ".join(str(v) for v in d.values) + ("," if len(d.values) == 1 else "")
                test, what = f"{name} not in ({values})", f"one of {{{', '.join(map(str, d.values))}}}"
            elif d.step != 1:
                test, what = f"{name} not in range({d.lo}, {d.hi + 1}, {d.step})", f"in {d}"
            else:
                test, what = f"not {d.lo} <= {name} <= {d.hi}", f"in {d.lo}..{d.hi}"
            lines += [f"    if {test}:", f"        raise ValueError({py_str(f'{s.name} must be {what}')})"]
        derived = [
            (n, v.value)
            for n, v in getattr(g, "derived", {}).items()
            if getattr(v, "value", None) is not None and IDENTIFIER.match(n)  # emitted(t) stays inlined
        ]
        guards = getattr(g, "guards", [])
        used: list[str] = []
        texts = []
        for guard in guards:
            cond = _refold(guard.cond, derived)
            texts.append(cond)
            used += [s.name for s in free_symbols(cond) if s.name in dict(derived)]
        needed = set(used)
        for name, value in reversed(derived):
            if name in needed:
                needed |= {
                    s.name
                    for s in free_symbols(_refold(value, [d for d in derived if d[0] != name]))
                    if s.name in dict(derived)
                }
        for name, value in derived:
            if name in needed:
                earlier = [d for d in derived if d[0] != name]
                lines.extend(layout(f"{self.em.py(name)} = {self.host_int(_refold(value, earlier))}", 1))
        for guard, cond in zip(guards, texts, strict=True):
            text = self.host_int(cond)
            if len(text) > LINE_LENGTH - 16 and isinstance(cond, Bin):  # name long operands first
                cond = Bin(cond.op, *(self.host_hoist(x, lines) for x in (cond.a, cond.b)))
                text = self.host_int(cond)
            if isinstance(cond, Bin) and cond.op in ("and", "or"):
                text = f"({text})"
            lines.append(f"    if not {text}:")
            lines.append(f"        raise ValueError({py_str(guard.message or guard.text)})")
        return lines

    def host_hoist(self, e: Expr, lines: list[str]) -> Expr:
        """Bind a long host expression to a local (operands first), keep a short one."""
        text = self.host_int(e)
        if len(text) <= (LINE_LENGTH - 16) // 2 or not isinstance(e, Bin):
            return e
        if len(text) > LINE_LENGTH - 16:
            e = Bin(e.op, self.host_hoist(e.a, lines), self.host_hoist(e.b, lines))
        self.host_temps += 1
        name = f"_g{self.host_temps}"
        lines.append(f"    {name} = {self.host_int(e)}")
        return Sym(name, EMITTED)

    def window_buffer(self, name: str) -> str:
        """``_<window>_buf``, the buffer of a window: ``_`` + its name + ``_buf`` starts with ``_``
        and ends in a letter, so no source name has it; one per window (the names are injective)."""
        return f"_{self.em.py(name)}_buf"

    def host_int(self, e: Expr) -> str:
        return int_text(e, self.em.module_names, "")

    def host(self, entry: str) -> list[str]:
        """``l3_<layer>``: allocate the windows, then run ``<layer>_test`` on every rank with its
        arguments in the entry's own order (tensors, windows and signals as declared, then
        ``my_rank`` and the scalars). Host tensors carry a leading rank dimension (``x[r]``)."""
        windows = [t for t in self.em.params() if t.kind in ("window", "signal")]
        host_tensors = [t for t in self.em.params() if t.kind not in ("window", "signal")]
        scalars = [n for n, _ in self.em.scalars() if n != "my_rank"]
        lines = [
            "@pl.jit.host",
            *layout(
                Cat([f"def l3_{entry}", paren([self.em.py(t.name) for t in host_tensors] + scalars), ":"]), 0
            ),
        ]
        for t in windows:
            shape = lst([self.em.mod(d) for d in t.shape])
            buf = call("pld.alloc_window_buffer", shape, dtype=dtype_name(t.dtype))
            lines.extend(layout(Cat([f"{self.window_buffer(t.name)} = ", buf]), 1))
        lines.append(f"    for r in pl.range({self.em.ranks_text}):")
        args: list[Doc] = []
        for t in self.em.params():  # declaration order: the order of the entry's parameters
            if t.kind in ("window", "signal"):
                shape = lst([self.em.mod(d) for d in t.shape])
                args.append(call("pld.window", self.window_buffer(t.name), shape, dtype=dtype_name(t.dtype)))
            else:
                args.append(f"{self.em.py(t.name)}[r]")
        args += ["r", *scalars]
        lines.extend(layout(Cat([call(f"{entry}_test", *args, device="r")]), 2))
        return lines

    def specs(self) -> list[dict]:
        """The host tensors of ``build_tensor_specs``; a layer over several ranks gives each a
        leading dimension of the rank count, which ``l3_<layer>`` indexes with ``[r]``."""
        out = []
        for t in self.em.params():
            if t.kind in ("window", "signal"):
                continue
            dims = tuple(t.shape)
            if self.em.distributed:
                dims = (self.em.graph.ranks, *dims)
            out.append(
                {
                    "name": py_str(t.name),
                    "dims": dims,
                    "dtype": TORCH_DTYPES[t.dtype],
                    "output": t.kind in ("output", "inout"),
                }
            )
        return out


def _refold(e: Expr, derived: list[tuple[str, Expr]]) -> Expr:
    """Name the derived scalars again in an expression where they were inlined."""
    for name, value in reversed(derived):
        e = _replace(e, value, Sym(name, SCALAR))
    return e


def _replace(e: Expr, target: Expr, by: Expr) -> Expr:
    if e == target:
        return by
    if isinstance(e, Bin):
        a, b = _replace(e.a, target, by), _replace(e.b, target, by)
        return e if a is e.a and b is e.b else Bin(e.op, a, b)
    return e
