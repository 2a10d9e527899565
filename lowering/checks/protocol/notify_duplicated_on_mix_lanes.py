"""D112: a notify in a ``mix`` (cube + vector) task fires on both lanes.

## What it catches

Any ``notify`` in a task that runs on ``mix`` -- written ``on mix`` or inferred because the
body has both cube (``matmul``) and vector ops. The language has no per-lane region
(no ``split_aiv`` and no lane index), on purpose: a mixed kernel cannot shard a notify by
lane, so dslc requires the notify to come from a single-lane task. The count rules (D103)
count a notify once per block, as written; this rule is what flags the duplicate.

## Why it breaks on the device

Outside a per-lane region, a mixed kernel emits every scalar side effect on both its AIC
and its AIV lane, and TNOTIFY needs no particular core: each block deposits twice
(docs/runtime-semantics.md §7.1). A wait for ``epoch * n`` then releases after half of the blocks
have notified -- before the data the other half publishes has arrived. Nothing in pypto
diagnoses it (D7 "a double notify from lane duplication").

## Example

    task expert spmd(N) on mix {
      let h = matmul(x[...], w[...])
      y[...] = silu(h)
      notify done[rank] @ 0 += 1              # emitted by the AIC and by the AIV lane
    }

## Use instead

    task expert spmd(N) on mix { let h = matmul(x[...], w[...]); y[...] = silu(h) }
    task publish on aiv after expert { notify done[rank] @ 0 += 1 }   # one lane, after the grid join
    # (wait for `epoch`, one notify per rank and epoch)

## What dslc verify shows

The simulator runs a MIX block's kernel once, so the duplicated notify fires once: ``dslc
verify`` cannot see the early release and proves ``bad.dsl`` correct at EP 2.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "D112"
NAME = "notify_duplicated_on_mix_lanes"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "a notify in a mix (cube + vector) task fires on both the AIC and the AIV lane"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    reported: set = set()
    for task in graph.tasks:
        if task.core != "mix":
            continue
        why = "" if task.core_explicit else " (inferred from its cube and vector ops)"
        for op in task.notifies:
            if op.span in reported:
                continue
            reported.add(op.span)
            yield finding(
                CODE,
                SEVERITY,
                op.span,
                f"{task.name} runs on mix{why} and notifies {op.signal}: a mixed kernel emits the notify on "
                f"both its AIC and its AIV lane, so every block deposits twice and a wait on {op.signal} "
                f"releases before all blocks (and the data they publish) are done",
                fix=f"move the notify into an `on aiv` task `after {task.base}`",
            )
