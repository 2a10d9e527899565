"""What ``pl.*`` calls mean in orchestration code: tensors and views, task-id arrays, submissions.

``pl.create_tensor`` allocates a scratch tensor (``manual_dep=`` kept), ``pl.reshape`` /
``pl.slice`` / a subscript make views that accesses are translated back onto their root;
``pl.array.*`` of ``pl.TASK_ID`` hold task ids for ``deps=``; ``pl.submit`` /
``pl.spmd_submit`` and a call to an InCore or extern kernel are tasks; ``pl.system.task_dummy``
is a zero-block join. A host-side ``pl.read``/``pl.write`` or a cross-rank op outside any
kernel is a P001 note. ``OrchestrationCalls`` is composed by ``OrchestrationReader``, which
evaluates, and uses its task builder (``scopes.TaskBuilder``) for the tasks.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.ir import DTYPE_BYTES
from lowering.pypto_reader.directions import annotation_direction
from lowering.pypto_reader.interp_frames import Frame
from lowering.pypto_reader.notes import span_of
from lowering.pypto_reader.tensors import TensorInfo
from lowering.pypto_reader.values import (
    UNKNOWN,
    BoundMethod,
    BuiltinVal,
    ClassVal,
    DtypeVal,
    ExternVal,
    FuncVal,
    IntVal,
    PyVal,
    SeqVal,
    TaskArrayVal,
    TaskIdVal,
    TensorVal,
    Unknown,
    Val,
)
from lowering.symbolic import DYNAMIC, Const, Expr, Sym, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.orchestration import OrchestrationReader


class OrchestrationCalls:
    """The ``pl.*`` calls of the orchestration ``ev``: it evaluates their operands, its task
    builder (``ev.tasks``) makes the tasks they submit."""

    def __init__(self, ev: OrchestrationReader) -> None:
        self.ev = ev
        self.pending_name: str | None = None  # the name a value is being assigned to

    def call_other(self, func: Val, node: ast.Call) -> Val | None:
        """A call to a kernel is a task; None when the interpreter gives the call its Python meaning."""
        target = func.func if isinstance(func, BoundMethod) else func
        if isinstance(target, FuncVal):
            if target.kind in ("incore", "extern"):
                name = self.ev.tasks.kernel_task(node, target, Const(1), [], None, node)
                return TaskIdVal((name,))
            if target.kind == "host":
                return UNKNOWN
            return None  # spliced: ``OrchestrationReader.call_function``
        if isinstance(func, ClassVal | BuiltinVal | ExternVal):
            return None  # a class of the file, a builtin, or opaque: interpreted
        self.ev.eval_args(node)  # its arguments still run (and may submit tasks)
        self.ev.notes.not_modelled(
            span_of(self.ev.file, node),
            f"a call to '{ast.unparse(node.func)}', which the reader cannot resolve"
            + (f" ({func.why})" if isinstance(func, Unknown) and func.why else ""),
            "if it submits tasks, they are missing from the graph",
        )
        return UNKNOWN

    def attribute(self, base: Val, attr: str, node: ast.AST) -> Val | None:
        """What a tensor's attribute means in orchestration; None for the Python meaning."""
        if isinstance(base, TensorVal) and attr == "bind_dynamic":
            return BuiltinVal("bind_dynamic", lambda ev, a, k, n: PyVal(None))  # read before the entry runs
        if isinstance(base, TensorVal) and attr == "dtype":
            info = self.ev.prog.tensors.get(base.root)
            return DtypeVal(info.dtype.upper(), info.dtype) if info is not None else UNKNOWN
        return None

    def call_pl(self, path: str, node: ast.Call) -> Val:
        if path in ("pl.create_tensor", "pl.tensor.create_tensor", "pl.tensor.create"):
            return self.create_tensor(node)
        if path in ("pl.array.create",):
            b = self.ev.arguments(node, ["extent", "dtype"])
            d = self.ev.eval(b["dtype"]) if "dtype" in b else None
            size = self.ev.int_expr(self.ev.eval(b["extent"])) if "extent" in b else None
            if isinstance(d, DtypeVal) and d.name == "TASK_ID":
                return TaskArrayVal(size)
            return UNKNOWN
        if path == "pl.array.update_element":
            b = self.ev.arguments(node, ["array", "index", "value"])
            arr = self.ev.eval(b["array"]) if "array" in b else None
            if isinstance(arr, TaskArrayVal) and "index" in b and "value" in b:
                self.array_store(arr, b["index"], self.ev.eval(b["value"]))
            return arr or UNKNOWN
        if path == "pl.array.get_element":
            b = self.ev.arguments(node, ["array", "index"])
            arr = self.ev.eval(b["array"]) if "array" in b else None
            if isinstance(arr, TaskArrayVal):
                i = self.ev.static(self.ev.eval(b["index"])) if "index" in b else None
                return TaskIdVal(arr.cells.get(i, ()) if isinstance(i, int) else arr.all_tasks())
            return UNKNOWN
        if path == "pl.system.task_dummy":
            name, base, index = self.ev.tasks.task_name("task_dummy")
            after = self.ev.tasks.deps_of([node])
            self.ev.tasks.add_task(
                name, base, index, Const(0), None, node, after, False, False, None, False, None
            )
            return TaskIdVal((name,))
        if path == "pl.system.task_invalid":
            return TaskIdVal(())
        if path in ("pl.submit", "pl.spmd_submit"):
            return self.submit(path, node)
        if path in ("pl.reshape", "pl.tensor.reshape", "pl.tensor.view", "pl.reinterpret_view"):
            return self.reshape(node)
        if path in ("pl.slice", "pl.tensor.slice"):
            return self.slice_view(node)
        if path in ("pl.assemble", "pl.tensor.assemble"):
            return self.assemble_into(node)
        if path in ("pl.read", "pl.tensor.read", "pl.write", "pl.tensor.write"):
            what = "read" if path.endswith("read") else "write"
            target = self.ev.eval(node.args[0]) if node.args else None
            if isinstance(target, TensorVal):  # the orchestrator waits: every later task comes after
                self.ev.prog.host_sync.block_on(
                    self.ev.prog.tasks,
                    self.ev.prog.tensors,
                    target.root,
                    span_of(self.ev.file, node),
                    what == "write",
                )
                return IntVal(Sym(f"host_{what}@{node.lineno}", DYNAMIC))
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                f"a host-side pl.{what} in orchestration (the orchestrator blocks until the tensor's "
                + ("producer" if what == "read" else "producer and consumers")
                + " complete) of a tensor the reader cannot resolve",
                "this implicit ordering is not in the graph: findings it would rule out may be false positives",
            )
            return IntVal(Sym(f"host_{what}@{node.lineno}", DYNAMIC))
        if path in ("pl.tensor.dim", "pl.dim"):
            b = self.ev.arguments(node, ["tensor", "axis"])
            t = self.ev.eval(b["tensor"]) if "tensor" in b else None
            axis = self.ev.static(self.ev.eval(b["axis"])) if "axis" in b else None
            if isinstance(t, TensorVal) and isinstance(axis, int):
                shape = self.ev.tensor_shape(t)
                if isinstance(shape, SeqVal) and -len(shape.items) <= axis < len(shape.items):
                    return shape.items[axis]
            return IntVal(Sym(f"dim@{node.lineno}", DYNAMIC))
        if path in ("pl.no_dep", "pl.tensor.no_dep"):
            return self.ev.eval(node.args[0]) if node.args else UNKNOWN
        if path.startswith(("pld.system.", "pld.tensor.", "pld.tile.")) and path.endswith(
            ("notify", "wait", "put", "remote_store")
        ):
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                f"{path} outside any kernel scope",
                "PyPTO only allows it inside a kernel; it is not part of any task here",
            )
            return UNKNOWN
        return self.ev.scalar_pl(path, node)

    def array_store(self, arr: TaskArrayVal, index: ast.expr, value: Val) -> None:
        tasks = value.tasks if isinstance(value, TaskIdVal) else ()
        if isinstance(value, TaskArrayVal):
            tasks = value.all_tasks()
        i = self.ev.static(self.ev.eval(index))
        if isinstance(i, int):
            arr.cells[i] = tasks
        else:
            arr.unknown = (*arr.unknown, *tasks)

    def eval_assign_value(self, target: ast.expr, value: ast.expr) -> Val:
        self.pending_name = target.id if isinstance(target, ast.Name) else None
        try:
            return self.ev.eval(value)
        finally:
            self.pending_name = None

    def create_tensor(self, node: ast.Call) -> Val:
        b = self.ev.arguments(node, ["shape", "dtype", "layout", "manual_dep", "init_value"])
        shape = self.ev.int_seq(b.get("shape"))
        dtype = self.ev.dtype_named(b.get("dtype"), "f32")
        manual = "manual_dep" in b and self.ev.truth(self.ev.eval(b["manual_dep"])) is True
        init = self.ev.static(self.ev.eval(b["init_value"])) if "init_value" in b else None
        name = self.pending_name or f"tensor_{node.lineno}"
        name += "".join(f"[{v}]" for v in self.ev.loop_indices())
        info = self.ev.prog.tensors.add(
            TensorInfo(name, dtype, shape, "scratch", manual, span_of(self.ev.file, node))
        )
        if isinstance(init, int | float) and not isinstance(init, bool):
            info.init_value = float(init)
        return TensorVal(info.name)

    def reshape(self, node: ast.Call) -> Val:
        b = self.ev.arguments(node, ["input", "shape"])
        src = self.ev.eval(b["input"]) if "input" in b else None
        if not isinstance(src, TensorVal):
            return UNKNOWN
        shape = self.ev.int_seq(b.get("shape")) or None  # an empty shape is no shape
        root = self.ev.prog.tensors.get(src.root)
        if root is None:
            return UNKNOWN
        name = self.pending_name or f"{src.root}_view"
        offset = self.view_offset(src, root, node)
        info = self.ev.prog.tensors.add(
            TensorInfo(
                name, root.dtype, shape, root.kind if root.kind != "output" else "output", root.manual_dep,
                span_of(self.ev.file, node), root.distributed, root.declared_inout, view_of=src.root,
                view_offset=offset or 0, view_placed=offset is not None,
            )
        )  # fmt: skip
        return TensorVal(info.name)

    def view_offset(self, src: TensorVal, root: TensorInfo, node: ast.AST) -> int | None:
        """Byte offset of the first element of the slice ``src`` in its root (0 for the root;
        None, with a note, when an offset or a dimension cannot be evaluated)."""
        if src.offsets is None:
            return 0
        dims = [self.ev.value_of(d) for d in root.shape] if root.shape is not None else None
        offs = [self.ev.value_of(o) for o in src.offsets]
        if dims is None or None in dims or None in offs or len(dims) != len(offs):
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                f"where in '{src.root}' this view starts (an offset or dimension the reader cannot evaluate)",
                "its accesses are placed at the start of the buffer: edges through it may be wrong, and "
                "races through two views of the buffer (R502) are not judged",
            )
            return None
        flat = 0
        for o, d in zip(offs, dims, strict=True):
            flat = flat * d + o  # type: ignore[operator]
        return flat * DTYPE_BYTES.get(root.dtype, 4)

    def assemble_into(self, node: ast.Call) -> Val:
        """``target = pl.assemble(target, buf, offsets)`` in orchestration (see ``fuse_buffer``)."""
        b = self.ev.arguments(node, ["target", "source", "offset"])
        target = self.ev.eval(b["target"]) if "target" in b else None
        source = self.ev.eval(b["source"]) if "source" in b else None
        offs = self.ev.int_seq(b.get("offset"))
        info = self.ev.prog.tensors.get(source.root) if isinstance(source, TensorVal) else None
        view = None
        if isinstance(target, TensorVal) and info is not None and offs is not None and info.shape is not None:
            view = _view(target, offs, info.shape, ())  # type: ignore[arg-type]
        self.fuse_buffer(view, source, node)
        return target if isinstance(target, TensorVal) else UNKNOWN

    def fuse_buffer(self, view: Val | None, source: Val | None, node: ast.AST) -> None:
        """Place the fresh ``pl.create_tensor`` buffer ``source`` at ``view``, a window of a tensor.

        ``pl.assemble(target, buf, offsets)`` in orchestration, and its subscript sugar
        ``target[a:b, :] = buf``: PyPTO's FuseCreateAssembleToSlice pass
        (docs/runtime-semantics.md §12.1) allocates such a buffer as the slice of ``target`` at the
        offsets, so the tasks that wrote ``buf`` wrote those bytes of ``target``, and its readers
        depend on them. The buffer becomes a view of the target. Any other source is a P001 note:
        the copy is in no task.
        """
        info = self.ev.prog.tensors.get(source.root) if isinstance(source, TensorVal) else None
        root = self.ev.prog.tensors.get(view.root) if isinstance(view, TensorVal) else None
        if root is None and info is not None and info.view_of is None and info.kind == "scratch":
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                f"where the buffer '{info.name}' is assembled (a target or an offset the reader cannot evaluate)",
                "the copy is in no task: edges from its writers to the target's readers are missing",
            )
            return
        if (
            root is None
            or info is None
            or info.shape is None
            or source.offsets is not None  # type: ignore[union-attr]
            or info.view_of is not None
            or info.kind != "scratch"
        ):
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                "an orchestration pl.assemble whose source is not a fresh pl.create_tensor buffer"
                + (f" ('{info.name}' is a view, an input or a buffer already assembled)" if info else ""),
                "the copy is in no task: edges from the source's writers to the target's readers are missing",
            )
            return
        offset = self.view_offset(view, root, node)  # type: ignore[arg-type]
        info.view_of, info.view_offset, info.view_placed = view.root, offset or 0, offset is not None  # type: ignore[union-attr]
        info.kind, info.manual_dep = root.kind, root.manual_dep
        info.distributed, info.declared_inout = root.distributed, root.declared_inout

    def slice_view(self, node: ast.Call) -> Val:
        b = self.ev.arguments(node, ["input", "shape", "offset"])
        src = self.ev.eval(b["input"]) if "input" in b else None
        if not isinstance(src, TensorVal):
            return UNKNOWN
        shape = self.ev.int_seq(b.get("shape"))
        offs = self.ev.int_seq(b.get("offset"))
        if shape is None or offs is None:
            return src
        return _view(src, offs, shape, ())

    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        if isinstance(base, TaskArrayVal):
            i = self.ev.static(self.ev.eval(node.slice))
            return TaskIdVal(base.cells.get(i, ()) if isinstance(i, int) else base.all_tasks())
        if isinstance(base, TensorVal):
            shape_v = self.ev.tensor_shape(base)
            shape = [self.ev.int_expr(i) for i in shape_v.items] if isinstance(shape_v, SeqVal) else None
            elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if shape is None or len(elts) > len(shape):
                return base
            offs, ext, dropped = [], [], []
            for i, dim in enumerate(shape):
                e = elts[i] if i < len(elts) else None
                if e is None:
                    offs.append(Const(0))
                    ext.append(dim)
                elif isinstance(e, ast.Slice) and e.step is None:
                    lo = self.ev.int_expr(self.ev.eval(e.lower)) if e.lower is not None else Const(0)
                    hi = self.ev.int_expr(self.ev.eval(e.upper)) if e.upper is not None else dim
                    if lo is None or hi is None:
                        return base
                    offs.append(lo)
                    ext.append(binop("-", hi, lo))
                else:
                    idx = self.ev.int_expr(self.ev.eval(e)) if not isinstance(e, ast.Slice) else None
                    if idx is None:
                        return base
                    offs.append(idx)
                    ext.append(Const(1))
                    dropped.append(i)
            return _view(base, tuple(offs), tuple(ext), tuple(dropped))  # type: ignore[arg-type]
        return UNKNOWN

    def submit(self, path: str, node: ast.Call) -> Val:
        if not node.args:
            return UNKNOWN
        callee = self.ev.eval(node.args[0])
        if not isinstance(callee, FuncVal):
            callee = self.program_method(node.args[0]) or callee
        if not isinstance(callee, FuncVal):
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                f"{path} of a kernel the reader cannot resolve",
                "the task is missing",
            )
            return SeqVal((UNKNOWN, TaskIdVal(())))
        grid: Expr = Const(1)
        if path == "pl.spmd_submit":
            g = self.ev.kw(node, "core_num")
            if g is not None:
                e = self.ev.int_expr(self.ev.eval(g))
                grid = e if e is not None else Const(1)
        call = ast.Call(func=node.args[0], args=list(node.args[1:]), keywords=[])
        ast.copy_location(call, node)
        name = self.ev.tasks.kernel_task(call, callee, grid, [], None, node, flags_call=node)
        outs = tuple(v for v in self._last_outputs(callee, call))
        out_val: Val = outs[0] if len(outs) == 1 else SeqVal(outs)
        return SeqVal((out_val, TaskIdVal((name,))))

    def program_method(self, node: ast.expr) -> FuncVal | None:
        """``self.kernel`` in a ``@pl.jit`` function (no ``self`` bound): ``@pl.jit`` materialises
        the file's kernels as methods of the program it builds, so it names the module's kernel."""
        if not (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        ):
            return None
        if self.ev.frame.self_val is not None or "self" in self.ev.frame.locals:
            return None
        found = self.ev.frame.module.globals.get(node.attr)
        return found if isinstance(found, FuncVal) and found.kind in ("incore", "extern") else None

    def _last_outputs(self, callee: FuncVal, call: ast.Call) -> list[Val]:
        frame = Frame(callee.module)
        bound = self.ev.bind_args(frame, callee, call, skip_self=callee.owner is not None)
        out = []
        for p in callee.node.args.args:
            d, _ = annotation_direction(self.ev, p.annotation)
            if d in ("out", "inout") and p.arg in bound:
                out.append(frame.locals[p.arg])
        return out


# ---------------------------------------------------------------- helpers


def _view(
    base: TensorVal, offs: tuple[Expr, ...], ext: tuple[Expr, ...], dropped: tuple[int, ...]
) -> TensorVal:
    """A slice view of ``base``, composed onto its root."""
    if base.offsets is not None:
        full, it = [], iter(zip(offs, ext, strict=True))
        new_off, new_ext = [], []
        for dim, off in enumerate(base.offsets):
            if dim in base.dropped:
                new_off.append(off)
                new_ext.append(Const(1))
                continue
            o, e = next(it, (Const(0), Const(1)))
            new_off.append(binop("+", off, o))
            new_ext.append(e)
            full.append(dim)
        kept = [d for d in range(len(base.offsets)) if d not in base.dropped]
        newly = tuple(kept[i] for i in dropped if i < len(kept))
        return TensorVal(base.root, tuple(new_off), tuple(new_ext), tuple(sorted(base.dropped + newly)))
    shape = tuple(e for i, e in enumerate(ext) if i not in dropped)
    return TensorVal(base.root, offs, shape, dropped)
