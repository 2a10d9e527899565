"""Short phrases shared by rule messages, so every finding names things the same way."""

from __future__ import annotations

from lowering.ir import Edge, Graph, Task


def grid(task: Task) -> str:
    """``spmd 16, AIV`` or ``1 block, AIV``."""
    size = f"spmd {task.blocks}" if task.blocks != 1 else "1 block"
    return f"{size}, {task.core.upper()}"


def incoming(graph: Graph, task: Task) -> str:
    """What orders ``task`` today: 'no incoming edge', 'only edge: anchor read of `x` (from g)'."""
    edges = [e for e in graph.edges if e.dst == task.name]
    if not edges:
        return "it has no incoming edge"
    parts = [edge(e) for e in edges]
    return ("only edge: " if len(parts) == 1 else "edges: ") + "; ".join(parts)


def edge(e: Edge) -> str:
    if e.kind == "explicit":
        return f"after {e.src}"
    what = "anchor read" if e.anchor else e.kind.upper()
    return f"{what} of `{e.tensor}` (from {e.src})"
