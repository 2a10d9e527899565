"""One task -> one ``extern "C" __global__ __aicore__`` kernel: signature, prologue, body.

The kernel takes one ``GM_ADDR`` per tensor it touches (windows and signals: a table of
per-rank base addresses), then ``dslcRank`` when it needs the rank, then the runtime
scalars it reads. Its block index is ``GetBlockIdx()``; a grid larger than the blocks
launched is looped over ``GetBlockNum()``, so the host may launch fewer blocks than the
grid. A task with a hard barrier needs every block resident at once: it is launched with
exactly its grid and runs its body once per block, with ``SyncAll`` at the barrier.
A ``when`` predicate is evaluated by every block first; when false the kernel returns, as
the runtime retires the task without running it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from lowering import body as ir_body
from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.aic import CubeWriter
from lowering.codegen.ascendc.aiv import VectorWriter
from lowering.codegen.ascendc.comm import peers
from lowering.codegen.ascendc.cxx import BLOCK_VAR, RANK_VAR, capacity_dims, cxx_type
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.mix import split_mix
from lowering.codegen.ascendc.tiles import Budget
from lowering.ir import Graph, Task, Tensor
from lowering.symbolic import Const
from runtime.device import PRESETS as DEVICES

_CMP = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "eq": "==", "ne": "!=",
        "lt": "<", "le": "<=", "gt": ">", "ge": ">="}  # fmt: skip
_COMMENT_SAFE = re.compile(r"[^A-Za-z0-9_.\[\]]")
#: The cores of the device the target is for, a2a3 (Atlas A2/A3: 24 clusters of 1 AIC + 2 AIV),
#: as the lint and the simulator count them (``runtime.device``).
AIV_CORES = DEVICES["a2a3"].aiv
AIC_CORES = DEVICES["a2a3"].aic
_KERNEL_TYPE = {
    "aiv": "KERNEL_TYPE_AIV_ONLY",
    "aic": "KERNEL_TYPE_AIC_ONLY",
    "mix": "KERNEL_TYPE_MIX_AIC_1_1",
}


@dataclass
class Kernel:
    name: str
    task: str
    index: int
    core: str  # aiv | aic
    grid: int
    barrier: bool
    params: list[tuple[str, str]]  # (C++ type, name), in call order
    args: list[tuple[str, str]]  # (kind, source name): tensor | rank | scalar
    lines: list[str]
    budget: Budget
    workspaces: dict[str, Tensor] = field(default_factory=dict)  # mix: the hand-off tensors
    flags: int = 0  # mix: cross-core set/wait pairs in the program

    @property
    def signature(self) -> str:
        return ", ".join(f"{t} {n}" for t, n in self.params)


def comment_text(name: str) -> str:
    """A source name as it may appear inside a ``//`` comment (it cannot end the comment)."""
    return _COMMENT_SAFE.sub("?", name)


def build_kernel(graph: Graph, task: Task, index: int, env: dict[str, int]) -> Kernel:
    core = task.core
    barrier = any(isinstance(s, ir_body.BarrierS) for s in ir_body.nested_stmts(task.body))
    if core == "mix":
        return _build_mix(graph, task, index, env, barrier)
    writer_cls = VectorWriter if core == "aiv" else CubeWriter
    w = writer_cls(graph, task, env)
    if barrier and core != "aiv":
        raise refuse(
            "A701", "a barrier in an aic task (SyncAll is emitted for aiv and mix tasks)", task.header_span
        )
    _check_resident(task, barrier, AIV_CORES, "AIV cores")
    lines = [_task_type(core), *_side(w, graph, task, core, barrier, task.body)]
    params, args = _signature(graph, [w])
    return Kernel(
        names.kernel(graph.name, index, task.name), task.name, index, core, task.blocks, barrier, params, args,
        lines, w.budget(),
    )  # fmt: skip


def _build_mix(graph: Graph, task: Task, index: int, env: dict[str, int], barrier: bool) -> Kernel:
    """A MIX kernel (``mix``): the AIC program under ``if ASCEND_IS_AIC``, the AIV one under
    ``if ASCEND_IS_AIV``, each with its own buffers and its own copy of the block loop."""
    _check_resident(task, barrier, AIC_CORES, "clusters (AIC + AIV)")
    plan = split_mix(graph, task, env)
    g = replace(graph, tensors={**graph.tensors, **plan.workspaces})
    cube = CubeWriter(g, replace(task, body=plan.aic), env)
    vector = VectorWriter(g, replace(task, body=plan.aiv), env)
    dma = cube.dma_written | vector.dma_written  # the other core's stores count for a scalar read
    lines = [_task_type("mix")]
    for w, core, body, test in (
        (cube, "aic", plan.aic, "ASCEND_IS_AIC"),
        (vector, "aiv", plan.aiv, "ASCEND_IS_AIV"),
    ):
        w.mix = True
        w.dma_written = dma
        lines.append(f"    if {test} {{")
        lines.extend("    " + line for line in _side(w, g, task, core, barrier, body))
        lines.append("    }")
    params, args = _signature(g, [cube, vector])
    c, v = cube.budget(), vector.budget()
    budget = Budget(
        calc=v.calc, in_bytes=v.in_bytes, in_count=v.in_count, out_bytes=v.out_bytes, out_count=v.out_count,
        l1=c.l1, l0a=c.l0a, l0b=c.l0b, l0c=c.l0c, peaks={**c.peaks, **v.peaks},
    )  # fmt: skip
    return Kernel(
        names.kernel(graph.name, index, task.name), task.name, index, "mix", task.blocks, barrier, params, args,
        lines, budget, plan.workspaces, plan.flags,
    )  # fmt: skip


def _task_type(core: str) -> str:
    return f"    KERNEL_TASK_TYPE_DEFAULT({_KERNEL_TYPE[core]});"


def _check_resident(task: Task, barrier: bool, cores: int, what: str) -> None:
    if barrier and task.blocks > cores:
        raise refuse(
            "A721",
            f"task {task.name} holds a barrier over {task.blocks} blocks, more than the {cores} {what} "
            "of an a2a3 device: they cannot all be resident",
            task.header_span,
        )


def _side(w, graph: Graph, task: Task, core: str, barrier: bool, body: tuple) -> list[str]:
    """One core's program: buffers and GM tensors, the `when` predicate, the block loop."""
    w.text.depth = 1 if barrier else 2
    w.block(body)
    inner = w.text.lines
    w.text.lines = []
    w.text.depth = 1
    predicate = _predicate(w, task)
    lines = [*_prologue(w, graph, core), *predicate]
    first = "AscendC::GetBlockIdx()"
    if w.mix and core == "aiv":  # a MIX kernel's AIV counts vector cores: cluster * ratio + sub-block
        first += " / AscendC::GetTaskRatio()"
    if barrier:
        lines.append(f"    const int64_t {BLOCK_VAR} = {first};")
        lines.extend(inner)
    else:
        lines.append(
            f"    for (int64_t {BLOCK_VAR} = {first}; {BLOCK_VAR} < {task.blocks}; "
            f"{BLOCK_VAR} += AscendC::GetBlockNum()) {{"
        )
        lines.extend(inner)
        lines.append("    }")
    return lines


def _signature(graph: Graph, writers: list) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    params: list[tuple[str, str]] = []
    args: list[tuple[str, str]] = []
    for name in graph.tensors:
        if any(name in w.tensors for w in writers):
            params.append(("GM_ADDR", names.param(name)))
            args.append(("tensor", name))
    if any(w.uses_rank for w in writers):
        params.append(("int32_t", RANK_VAR))
        args.append(("rank", ""))
    for name, s in graph.scalars.items():
        if any(name in w.scalars for w in writers):
            params.append((cxx_type(s.dtype) if s.dtype != "bool" else "int32_t", names.scalar(name)))
            args.append(("scalar", name))
    return params, args


def _predicate(w, task: Task) -> list[str]:
    p = task.predicate
    if p is None:
        return []
    region = tuple(ir_body.Range(i, i + 1, Const(1), point=True) for i in p.index)
    dtype = w.graph.tensors[p.tensor].dtype
    load = ir_body.LoadV(p.tensor, region, ir_body.ScalarType(dtype))
    value = w.gm_read(load).code
    w.text.lines.append(f"    if (!({value} {_CMP[p.cmp]} {w.int(p.value)})) {{")
    w.text.lines.append("        return;  // `when` is false: the task retires without running")
    w.text.lines.append("    }")
    out = w.text.lines
    w.text.lines = []
    return out


def _prologue(w, graph: Graph, core: str) -> list[str]:
    b = w.budget()
    lines = ["    AscendC::TPipe pipe;"]
    inits = []
    if core == "aiv":
        if b.in_count:
            lines.append("    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueue;")
            inits.append(f"    pipe.InitBuffer(inQueue, {b.in_count}, {b.in_bytes});")
        if b.out_count:
            lines.append("    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueue;")
            inits.append(f"    pipe.InitBuffer(outQueue, {b.out_count}, {b.out_bytes});")
        if b.calc:
            lines.append("    AscendC::TBuf<AscendC::TPosition::VECCALC> calcBuf;")
            inits.append(f"    pipe.InitBuffer(calcBuf, {b.calc});")
    else:
        for var, pos, size in (
            ("l1aBuf", "A1", w.l1a.peak),
            ("l1bBuf", "B1", w.l1b.peak),
            ("l0aBuf", "A2", b.l0a),
            ("l0bBuf", "B2", b.l0b),
            ("l0cBuf", "CO1", b.l0c),
        ):
            if size:
                lines.append(f"    AscendC::TBuf<AscendC::TPosition::{pos}> {var};")
                inits.append(f"    pipe.InitBuffer({var}, {size});")
    lines.extend(inits)
    for name, t in graph.tensors.items():
        if name not in w.tensors:
            continue
        ctype = cxx_type(t.dtype)
        numel = math.prod(capacity_dims(graph, name, w.env) or (1,))
        gm, param = names.tensor(name), names.param(name)
        lines.append(f"    AscendC::GlobalTensor<{ctype}> {gm};")
        if t.kind in ("window", "signal"):
            table = peers(name)
            lines.append(f"    AscendC::GlobalTensor<uint64_t> {table};")
            lines.append(
                f"    {table}.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t*>({param}), {graph.nranks});"
            )
            base = f"reinterpret_cast<__gm__ {ctype}*>({table}.GetValue({RANK_VAR}))"
        else:
            base = f"reinterpret_cast<__gm__ {ctype}*>({param})"
        lines.append(f"    {gm}.SetGlobalBuffer({base}, {numel});")
    return lines
