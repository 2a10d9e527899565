"""Printing the IR: JSON (for tools and golden tests) and Graphviz DOT (for people)."""

from __future__ import annotations

import json

from lowering.body import region_text
from lowering.ir import Access, Edge, Graph, SignalOp, Task
from lowering.source import Span


def _span(span: Span) -> dict:
    return {"file": span.file, "line": span.line, "col": span.col}


def _access(a: Access) -> dict:
    out = {
        "tensor": a.tensor,
        "mode": a.mode,
        "region": region_text(a.region),
        "dtype": a.dtype,
        "loops": [f"{lp.var} in {lp.kind}({lp.start}, {lp.stop}, {lp.step})" for lp in a.loops],
        "conditions": [str(c.expr) for c in a.conds],
        "span": _span(a.span),
    }
    if a.peer is not None:
        out["peer"] = str(a.peer)
    return out


def _signal(s: SignalOp) -> dict:
    out = {
        "kind": s.kind,
        "cell": f"{s.signal}[{', '.join(str(i) for i in s.index)}]",
        "loops": [f"{lp.var} in {lp.kind}({lp.start}, {lp.stop}, {lp.step})" for lp in s.loops],
        "conditions": [str(c.expr) for c in s.conds],
        "span": _span(s.span),
    }
    if s.kind == "notify":
        out.update(peer=str(s.peer), op=s.op, value=str(s.value))
    else:
        out.update(cmp=s.cmp, expected=str(s.expected))
    return out


def _predicate(t: Task) -> str | None:
    p = t.predicate
    if p is None:
        return None
    return f"{p.tensor}[{', '.join(map(str, p.index))}] {p.cmp} {p.value}"


def _task(t: Task) -> dict:
    return {
        "name": t.name,
        "grid": str(t.grid),
        "blocks": t.blocks,
        "core": t.core,
        "early_resolve": t.early_resolve,
        "sync_start": t.sync_start,
        "manual": t.manual,
        "predicate": _predicate(t),
        "after": [d.target for d in t.after],
        "accesses": [_access(a) for a in t.accesses],
        "signals": [_signal(s) for s in t.signals],
        "barriers": [{"soft": b.soft, "span": _span(b.span)} for b in t.barriers],
        "span": _span(t.span),
    }


def _edge(e: Edge) -> dict:
    out = {"src": e.src, "dst": e.dst, "kind": e.kind, "reason": e.reason}
    if e.tensor:
        out.update(tensor=e.tensor, region=e.region, anchor=e.anchor)
    return out


def to_dict(g: Graph) -> dict:
    return {
        "layer": g.name,
        "params": {
            p.name: {"value": p.value, "domain": str(p.domain) if p.domain else None}
            for p in g.params.values()
        },
        "consts": {c.name: {"expr": str(c.expr), "value": c.value} for c in g.consts.values()},
        "ranks": g.nranks,
        "scalars": {s.name: s.dtype for s in g.scalars.values()},
        "tensors": {
            t.name: {
                "kind": t.kind,
                "dtype": t.dtype,
                "shape": [str(d) for d in t.shape],
                "manual_dep": t.manual_dep,
            }
            for t in g.tensors.values()
        },
        "tasks": [_task(t) for t in g.tasks],
        "edges": [_edge(e) for e in g.edges],
        "cross_round_edges": [_edge(e) for e in g.cross_round_edges],
    }


def to_json(g: Graph) -> str:
    return json.dumps(to_dict(g), indent=2) + "\n"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(g: Graph) -> str:
    lines = [f"digraph {_q(g.name)} {{", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for t in g.tasks:
        flags = [
            f for f, on in (("early", t.early_resolve), ("sync", t.sync_start), ("manual", t.manual)) if on
        ]
        grid = f"spmd({t.blocks})" if t.blocks != 1 else "1 block"
        label = f"{t.name}\n{grid} {t.core}" + (f" [{', '.join(flags)}]" if flags else "")
        style = ', style="rounded,bold"' if t.waits else ""
        lines.append(f"  {_q(t.name)} [label={_q(label)}{style}];")
    for e in g.edges:
        style = ", style=dashed" if e.kind in ("explicit", "host") else ", style=dotted" if e.anchor else ""
        lines.append(f"  {_q(e.src)} -> {_q(e.dst)} [label={_q(e.reason)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
