"""R502: two views of one buffer are accessed by unordered tasks and their bytes overlap.

## What it catches

Two differently named tensors that name the same bytes (PyPTO `reshape`/`view` of one
buffer, recorded in the IR as `Tensor.view_of` and `view_offset`), accessed by two tasks
that no edge orders, where the byte ranges overlap and at least one access writes.

The language itself has no views: every declared tensor is its own buffer and a reshape is
written as index arithmetic on one name, so a layer written in dslc cannot alias. The rule
exists for graphs read from PyPTO, where two `reshape` views of one buffer are a known trap
(pypto-lib "traps" list; seed-bugs.md §8.3 R16).

## Why it breaks on the device

The runtime compares byte ranges on one base address, so it may add a RAW or WAW edge
across views, but it never adds a WAR edge, and strided views are compared conservatively.
A reader through one view and a writer through another therefore run in any order: the
decode KV writeback wrote the cache through one view while the gather still read it through
another, and `x_out` was wrong in 7 % of the runs. Per-name reasoning (a reviewer's, or a
checker's) does not see the alias at all.

## Example

    kv      = buffer [T, D]
    kv_flat = view of kv as [T * D, 1]
    task gather    { out = kv[0:16, :] }
    task writeback { kv_flat[0:512, :] = ... }          # R502: WAR through two views

## Use instead

Access the buffer through one name, or order the tasks explicitly (`writeback` after
`gather`); in PyPTO, `deps=[gather_tid]` on the writeback.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.access_instances import Hit, distinct, hits, local_tensor
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Access, Graph, Task, Tensor
from lowering.source import Diagnostic

CODE = "R502"
NAME = "aliasing_views"
FAMILY = "races"
SEVERITY = "error"
SUMMARY = "two views of one buffer are accessed by unordered tasks and their bytes overlap"


def root(graph: Graph, name: str) -> tuple[str, int]:
    """The buffer a tensor names and the byte offset of its element 0 in it."""
    offset, seen = 0, set()
    tensor = graph.tensors[name]
    while tensor.view_of is not None and tensor.name not in seen:
        seen.add(tensor.name)
        offset += tensor.view_offset
        tensor = graph.tensors[tensor.view_of]
    return tensor.name, offset


def _bytes(h: Hit, tensor: Tensor, offset: int) -> tuple[int, int]:
    first = last = 0
    for (lo, hi, _step), extent in zip(h.region, tensor.dims, strict=True):
        e = extent if extent is not None else 1 << 40
        first = first * e + lo
        last = last * e + hi - 1
    return offset + first * tensor.itemsize, offset + (last + 1) * tensor.itemsize


def _overlap(graph: Graph, t1: Task, a: Access, t2: Task, b: Access, offsets: dict[str, int]):
    ta, tb = graph.tensors[a.tensor], graph.tensors[b.tensor]
    ra = sorted(_bytes(h, ta, offsets[a.tensor]) for h in distinct(hits(graph, t1, a)))
    rb = sorted(_bytes(h, tb, offsets[b.tensor]) for h in distinct(hits(graph, t2, b)))
    i = j = 0
    while i < len(ra) and j < len(rb):
        (alo, ahi), (blo, bhi) = ra[i], rb[j]
        if alo < bhi and blo < ahi:
            return (max(alo, blo), min(ahi, bhi))
        if ahi <= bhi:
            i += 1
        else:
            j += 1
    return None


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    groups: dict[str, dict[str, int]] = {}
    for name, tensor in graph.tensors.items():
        if local_tensor(tensor):
            base, offset = root(graph, name)
            groups.setdefault(base, {})[name] = offset
    for base, offsets in groups.items():
        if len(offsets) < 2:
            continue
        users = [
            (t, [a for a in t.accesses if a.tensor in offsets and a.mode != "anchor"]) for t in graph.tasks
        ]
        users = [(t, accs) for t, accs in users if accs]
        for i, (t1, accs1) in enumerate(users):
            for t2, accs2 in users[i + 1 :]:
                if t1.name in ctx.ancestors[t2.name]:
                    continue
                hit = _first(graph, t1, accs1, t2, accs2, offsets)
                if hit is None:
                    continue
                a, b, (lo, hi) = hit
                kind = "WAR" if not a.writes else ("RAW" if not b.writes else "WAW")
                yield finding(
                    CODE,
                    SEVERITY,
                    b.span,
                    f"{kind} through two views of buffer `{base}`: {t2.name} "
                    f"{'writes' if b.writes else 'reads'} `{b.tensor}` and {t1.name} "
                    f"{'writes' if a.writes else 'reads'} `{a.tensor}`, which share bytes {lo}:{hi} of "
                    f"`{base}`, and nothing orders the two tasks; the runtime never adds a WAR edge and "
                    f"compares strided views only conservatively",
                    fix=f"access `{base}` through one name, or add `after {t1.name}` to task {t2.name}",
                    related=((a.span, f"the access of {t1.name}"),),
                )


def _first(graph, t1, accs1, t2, accs2, offsets):
    for a in accs1:
        for b in accs2:
            if a.tensor == b.tensor or not (a.writes or b.writes):
                continue
            if a.mode == "atomic" and b.mode == "atomic":
                continue
            found = _overlap(graph, t1, a, t2, b, offsets)
            if found is not None:
                return a, b, found
    return None
