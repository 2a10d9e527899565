"""Short phrases shared by rule messages, so every finding names things the same way."""

from __future__ import annotations

from lowering.ir import Edge, Graph, Task
from lowering.symbolic import free_symbols, render


def grid(task: Task) -> str:
    """``spmd 16, AIV`` or ``1 block, AIV``."""
    size = f"spmd {task.blocks}" if task.blocks != 1 else "1 block"
    return f"{size}, {task.core.upper()}"


def incoming(graph: Graph, task: Task) -> str:
    """What orders ``task`` today: 'no incoming edge', 'only edge: anchor read of `x` (from g)'."""
    edges = _incoming(graph).get(task.name, [])
    if not edges:
        return "it has no incoming edge"
    parts = [edge(e) for e in edges]
    return ("only edge: " if len(parts) == 1 else "edges: ") + "; ".join(parts)


def _incoming(graph: Graph) -> dict[str, list[Edge]]:
    """The edges into each task, in edge order (cached on the graph)."""
    key = (id(graph.edges), len(graph.edges))
    cached = graph.__dict__.get("_incoming_edges")
    if cached is None or cached[0] != key:
        index: dict[str, list[Edge]] = {}
        for e in graph.edges:
            index.setdefault(e.dst, []).append(e)
        cached = graph.__dict__["_incoming_edges"] = (key, index)
    return cached[1]


def edge(e: Edge) -> str:
    if e.kind == "explicit":
        return f"after {e.src}"
    if e.kind == "host":
        return f"submitted after the host waited for {e.src} (line {e.span.line})"
    what = "anchor read" if e.anchor else e.kind.upper()
    return f"{what} of `{e.tensor}` (from {e.src})"


def names(tasks: list[Task], counts: bool = True) -> str:
    """``exp_up[0..15] (16 tasks)``, ``gather``: task names with task arrays folded."""
    groups: dict[str, list[Task]] = {}
    for t in tasks:
        groups.setdefault(t.base if t.index is not None else t.name, []).append(t)
    parts = []
    for base, members in groups.items():
        if len(members) == 1:
            parts.append(members[0].name)
            continue
        idx = sorted(m.index for m in members if m.index is not None)
        contiguous = idx == list(range(idx[0], idx[0] + len(idx)))
        inner = f"{idx[0]}..{idx[-1]}" if contiguous else ", ".join(map(str, idx))
        parts.append(f"{base}[{inner}]" + (f" ({len(members)} tasks)" if counts else ""))
    return ", ".join(parts)


def point(graph: Graph, env: dict[str, int]) -> str:
    """``EP=8`` or ``EP=8, T=256``: the ranged parameters of one admissible point."""
    return ", ".join(f"{p.name}={env[p.name]}" for p in graph.params.values() if p.domain is not None)


def where(graph: Graph, failing: list[dict[str, int]], envs: list[dict[str, int]], limit: int = 4) -> str:
    """Which admissible points fail: 'at T=64 (any EP)', 'for every admissible EP in {2, 4}', ''."""
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    if not ranged or not failing:
        return ""
    seen = {n: sorted({env[n] for env in envs}) for n in ranged}
    bad = {n: sorted({env[n] for env in failing}) for n in ranged}
    box = [env for env in envs if all(env[n] in bad[n] for n in ranged)]
    if len(box) == len(failing):  # the failing points are a product of per-parameter values
        narrowed = [n for n in ranged if bad[n] != seen[n]]
        if not narrowed:
            return "for every admissible " + ", ".join(
                f"{n} in {{{', '.join(map(str, seen[n]))}}}" for n in ranged
            )
        text = ", ".join(
            f"{n}={bad[n][0]}" if len(bad[n]) == 1 else f"{n} in {{{', '.join(map(str, bad[n]))}}}"
            for n in narrowed
        )
        free = [n for n in ranged if n not in narrowed]
        return f"at {text}" + (f" (any {', '.join(free)})" if free else "")
    shown = "; ".join(point(graph, env) for env in failing[:limit])
    more = f" and {len(failing) - limit} more admissible points" if len(failing) > limit else ""
    return f"at {shown}{more}"


def grid_expr(graph: Graph, task: Task) -> str:
    """Like :func:`grid`, but symbolic (``spmd T // 16, MIX``) when it depends on a ranged parameter."""
    ranged = {p.name for p in graph.params.values() if p.domain is not None}
    pending, seen = [task.grid], set()
    varies = False
    while pending and not varies:
        for sym in free_symbols(pending.pop()):
            if sym.name in ranged:
                varies = True
            elif sym.name in graph.consts and sym.name not in seen:
                seen.add(sym.name)
                pending.append(graph.consts[sym.name].expr)
    if not varies:
        return grid(task)
    text = render(task.grid)
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return f"spmd {text}, {task.core.upper()}"
