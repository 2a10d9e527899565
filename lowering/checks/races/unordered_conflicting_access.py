"""R501: two tasks touch the same elements, one of them writes, and no edge orders them.

## What it catches

A pair of tasks whose accesses to a tensor share an element, at least one of them a write
(or an atomic add), where neither task is a transitive predecessor of the other through
`after` edges and the edges the runtime infers (docs/runtime-semantics.md §3). The finding names
why the runtime adds no edge:

- **write after read (WAR)**, above all: a task reads a region, a later task overwrites it.
  A pure reader leaves no trace in the runtime's tensor map, so the writer never waits for
  it (simpler `docs/war-anti-dependency.md`, pypto #2058). Source order orders nothing.
- **RAW through a `manual` task**: inside a manual scope only `after` edges exist, and a
  manual task's writes never register as producers.
- **WAW between pure `Out` writers**: a write-only argument registers as OUTPUT_EXISTING,
  which looks up no earlier writer; instances of one task statement in a layer `parallel`
  loop are not promoted to InOut (disjointness is assumed, as in `pl.parallel`).
- **WAW/WAR on a `manual_dep` tensor**, which gets no inferred edges at all.

Windows and signal cells are not checked here (peers write them; the handshake orders local
reads, see the protocol rules). Pairs of atomic adds belong to N201, an unordered zero seed
of an accumulator to N202, a read of a `manual_dep` tensor and a pure-`Out` write read back
later to R503, and blocks of one grid to R505. Overlap is decided per element, from the
exact region of every block and iteration at the layer's parameter point. A region that
depends on data (an index read from a tensor, a loop whose trip count comes from data) is
taken over its whole extent: the pair is still reported, since nothing rules the overlap out,
but the finding says "possible, not shown" unless the other access covers everything the
widened one can reach (then the overlap is certain). When *both* regions are chosen by data
(a ring-cache commit at a slot from `slot_mapping` against a gather of the rows `block_table`
names), nothing in the program shows an overlap: the finding is a note that names the tables
and the assumption the lint makes -- that the data keeps the rows apart, as a paged or ring
cache does (`races/data_rows.py`). Where the rows can coincide by design, that note is the
one to act on. The same holds for R503 (and R502 between views). The work is
bounded: past 100,000 pairs of tasks whose regions meet in one graph, the analysis stops and
an R501 note at the declaration of the tensor where it stopped says so.

## Why it breaks on the device

Without an edge the scheduler may run the two tasks in either order or at the same time.
For a WAR the writer can overwrite the data while the reader is still loading it: the
decode KV writeback raced the gather this way and 7 % of `x_out` was wrong while the cache
itself compared equal. Whether it shows depends on core counts, waves and timing, so it
passes on the simulator and on small configurations and fails intermittently at scale.

## Example

    for s in range(STEPS) {
      task gather[s] spmd(4) on aiv { out[s * T + block * 16 : ..., :] = kv[block * 16 : block * 16 + 16, :] }
      task writeback[s] spmd(4) on aiv { kv[block * 16 : block * 16 + 16, :] = fresh[...] }   # R501: WAR
    }

## Use instead

    for s in range(STEPS) {
      task gather[s] spmd(4) on aiv { ... }
      task writeback[s] spmd(4) on aiv after gather[s] { ... }     # the explicit WAR edge
    }

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round: accesses of two rounds are not compared (the tensor map orders what one
round writes and the next reads; a WAR across rounds is not checked).
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.races.conflicts import (
    MANUAL_CONSUMER,
    MANUAL_DEP,
    MANUAL_PRODUCER,
    OUT,
    WAR,
    Conflict,
    after_fix,
    call_alias,
    certainty,
    conflicts,
    grouped,
    instances_text,
    same_index,
    truncated,
)
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "R501"
NAME = "unordered_conflicting_access"
FAMILY = "races"
SEVERITY = "error"
SUMMARY = "two tasks touch the same elements, one writes, and no edge orders them (WAR above all)"


def owned_by_r503(c: Conflict) -> bool:
    return (c.kind == "raw" and c.cause == MANUAL_DEP) or (c.kind == "waw" and c.cause == OUT and c.reader)


def _why(c: Conflict) -> str:
    t1, t2 = c.first.name, c.second.name
    if c.cause == WAR:
        return (
            f"{t2} writes {c.where} that {t1} reads, and nothing orders {t2} after {t1}: the runtime "
            f"never adds a write-after-read edge (a pure reader leaves no trace in the tensor map), "
            f"so the write can land while {t1} is still reading"
        )
    verb = "reads" if c.kind == "raw" else "overwrites"
    head = f"{t2} {verb} {c.where} that {t1} writes, and nothing orders them: "
    if c.cause == MANUAL_DEP:
        return head + f"`{c.tensor}` is manual_dep, so the runtime infers no edge on it"
    if c.cause == MANUAL_CONSUMER:
        return head + f"{t2} is `manual`, so only its `after` edges exist"
    if c.cause == MANUAL_PRODUCER:
        return head + f"{t1} is `manual`, so its write never registers as a producer"
    if c.cause == OUT:
        return head + (
            f"{t2}'s write is a pure Out (OUTPUT_EXISTING), which takes no WAW edge, so the value "
            f"left behind depends on which task finishes last"
        )
    return head + "the edges inferred for this graph do not order the two tasks"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    mine = [c for c in conflicts(graph, ctx) if not owned_by_r503(c) and call_alias(graph, c) is None]
    for group in grouped(mine):
        c = group[0]
        kind = {"war": "WAR", "raw": "RAW", "waw": "WAW"}[c.kind]
        severity, shown = certainty(group, SEVERITY, ctx.cache.setdefault("races.data_rows.sources", {}))
        yield finding(
            CODE,
            severity,
            c.b.span,
            f"{kind} race on `{c.tensor}`: {_why(c)}{shown}{instances_text(group)}",
            fix=after_fix(c.first, c.second, same_index(group)),
            related=((c.a.span, f"the access of {c.first.name}"), (c.second.header_span, "the later task")),
        )
    for name, budget in truncated(graph, ctx):  # the analysis budget ran out: say so, at severity note
        yield finding(
            CODE,
            "note",
            graph.tensors[name].span,
            f"the race analysis stopped at `{name}`: the graph has more than {budget:,} pairs of "
            "tasks whose regions meet (dslc's analysis budget); the pairs past it were not checked",
            fix="give the tasks disjoint regions of the tensor, or split it",
        )
