"""The host side of an AscendC project: buffers, the launch sequence, the request checks.

Every task is launched on one ACL stream per rank, ``kernel<<<blocks, nullptr, stream>>>``,
in an order consistent with every edge of the graph: a topological order that, among
tasks whose inputs are ready, launches the ones that do not wait on a signal first (so a
waiter never sits in the stream in front of a local notifier it could need). One stream
per rank means no events: stream order is the only synchronisation the host adds. A
multi-rank layer's ``main`` runs its ranks on one device, one stream each, with every
window allocated once per rank and a table of the ranks' base addresses per window; a
deployment over several devices passes its communicator's window addresses instead.

``blocks`` is the grid, capped at the cores of the task's kind (``DSLC_AIV_CORES``,
``DSLC_AIC_CORES``, defaulting to a2a3's 48 and 24): kernels loop over the rest. A task with
a hard barrier is launched with its whole grid, and the host refuses to run when that
exceeds the cores.
"""

from __future__ import annotations

import heapq
import math

from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.comm import peers
from lowering.codegen.ascendc.cxx import RANK_VAR, IntWriter, capacity_dims, cxx_type
from lowering.codegen.ascendc.kernel import Kernel, comment_text
from lowering.ir import DTYPE_BYTES, Graph


def launch_order(graph: Graph) -> list[int]:
    """Task indices in a topological order of ``graph.edges``, non-waiters first when free."""
    index = {t.name: i for i, t in enumerate(graph.tasks)}
    preds: dict[int, set[int]] = {i: set() for i in range(len(graph.tasks))}
    for e in graph.edges:
        preds[index[e.dst]].add(index[e.src])
    succs: dict[int, list[int]] = {i: [] for i in preds}
    for dst, srcs in preds.items():
        for src in srcs:
            succs[src].append(dst)
    missing = {i: len(p) for i, p in preds.items()}
    ready = [(bool(graph.tasks[i].waits), i) for i, n in missing.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for j in sorted(succs[i]):
            missing[j] -= 1
            if missing[j] == 0:
                heapq.heappush(ready, (bool(graph.tasks[j].waits), j))
    assert len(order) == len(graph.tasks), "the task graph has a cycle"
    return order


def c_string(text: str) -> str:
    """A C++ string literal of ``text``: printable ASCII as is, everything else escaped."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def host_context(graph: Graph, kernels: list[Kernel], env: dict[str, int]) -> dict:
    ints = IntWriter(env, {}, graph.nranks, helpers="dslc_host")
    tensors = []
    for name, t in graph.tensors.items():
        dims = capacity_dims(graph, name, env) or tuple(d or 1 for d in t.dims)
        numel = math.prod(dims)
        row_bytes = math.prod(dims[1:]) * DTYPE_BYTES[t.dtype]
        # a leading dim that the runtime scalars give: the files hold that many rows of the
        # buffer, which is allocated (and zeroed) at the dim's largest value
        runtime = any(d is None for d in t.dims)
        used = f"static_cast<size_t>({ints.code(t.shape[0])}) * {row_bytes}" if runtime else None
        tensors.append(
            {
                "name": c_string(name),
                "file": c_string(names.encode(name) + ".bin"),
                "var": names.param(name),
                "table": peers(name) if t.kind in ("window", "signal") else None,
                "bytes": numel * DTYPE_BYTES[t.dtype],
                "file_bytes": used or str(numel * DTYPE_BYTES[t.dtype]),
                "input": t.kind in ("input", "inout"),
                "output": t.kind in ("output", "inout"),
                "comment": f"{t.kind} {t.dtype}{list(t.dims)}",
            }
        )
    scalars = []
    for name, s in graph.scalars.items():
        if name == "epoch":
            continue
        dom = s.domain
        scalars.append(
            {
                "name": c_string(name),
                "var": names.scalar(name),
                "flag": names.encode(name),
                "ctype": cxx_type(s.dtype) if s.dtype != "bool" else "int32_t",
                "default": (dom.values[0] if dom.values else dom.lo) if dom is not None else 0,
                "range": (dom.low, dom.high) if dom is not None and dom.values is None else None,
                "values": list(dom.values) if dom is not None and dom.values is not None else None,
            }
        )
    by_index = {k.index: k for k in kernels}
    launches = []
    for i in launch_order(graph):
        k = by_index[i]
        args = []
        for kind, name in k.args:
            if kind == "tensor":
                table = graph.tensors[name].kind in ("window", "signal")
                args.append(f"b.{peers(name) if table else names.param(name)}")
            elif kind == "rank":
                args.append(RANK_VAR)
            else:
                args.append(names.scalar(name))
        # an aic or mix kernel: one block per cluster (a mix block is its AIC and one AIV)
        cores = "DSLC_AIV_CORES" if k.core == "aiv" else "DSLC_AIC_CORES"
        launches.append(
            {
                "kernel": k.name,
                "task": k.task,
                "task_comment": comment_text(k.task),
                "task_name": c_string(k.task),
                "grid": k.grid,
                "blocks": str(k.grid) if k.barrier else f"dslc_host::Blocks({k.grid}, {cores})",
                "barrier": k.barrier,
                "cores": cores,
                "args": ", ".join(args),
            }
        )
    guards = []
    for g in graph.guards:
        try:
            cond = ints.code(g.cond)
        except Exception:  # noqa: BLE001 - a guard the host cannot evaluate is reported, not emitted
            continue
        guards.append(
            {
                "cond": cond,
                "say": c_string(
                    f"guard `{g.text}` (line {g.span.line})" + (f": {g.message}" if g.message else "")
                ),
            }
        )
    return {
        "tensors": tensors,
        "scalars": scalars,
        "launches": launches,
        "guards": guards,
        "nranks": graph.nranks,
        "uses_epoch": "epoch" in graph.scalars,
        "epoch_var": names.scalar("epoch"),
    }
