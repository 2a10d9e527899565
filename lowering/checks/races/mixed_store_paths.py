"""R504: one task stores tiles and writes single elements into the same tensor.

## What it catches

A task body that writes a tensor both through tile stores (`t[a:b, :] = tile`, `+=`,
`+= ... atomic`) and through scalar element writes (`t[i, j] = value`, every subscript an
index). The two go through different store paths on the device (MTE3 tile stores vs the
scalar unit's stores), with no ordering and no coherence between them (docs/runtime-semantics.md
§21.3, R17; pypto-lib #754, #971). The check is per tensor, as pypto's store-path validation is:
disjoint regions can still share a cache line.

## Why it breaks on the device

The scalar write can land before or after the tile store that covers the same line,
whatever the program order, and a cache-line write-back from one path can overwrite the
other's bytes. The tensor then holds a mix of old and new values that changes from run to
run; pypto now rejects such kernels, so the layer would not compile there either.

## Example

    task pack on aiv {
      rows[0 : 16, :] = x[0 : 16, :]          # tile store (MTE3)
      rows[16, 0] = 1.0                       # R504: scalar write into the same tensor
    }

## Use instead

    task pack on aiv {
      rows[0 : 16, :] = x[0 : 16, :]
      rows[16 : 17, 0 : 1] = full(f32, [1, 1], 1.0)   # one store path; or write the flag in another tensor
    }

## What dslc verify shows

The simulator has one store path: a block's tile and scalar stores land in program order, so
``dslc verify`` proves ``tests/fixtures/seed/mixed_store_paths_pre.dsl`` deterministic. The
finding is about the device's separate store pipes, which the runtime model does not have.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.access_instances import local_tensor
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Access, Graph
from lowering.source import Diagnostic

CODE = "R504"
NAME = "mixed_store_paths"
FAMILY = "races"
SEVERITY = "warning"
SUMMARY = "tile stores and scalar element writes into the same tensor from one task"


def is_scalar(access: Access) -> bool:
    return all(r.point for r in access.region)


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    for task in graph.tasks:
        stores: dict[str, list[Access]] = {}
        for a in task.accesses:
            if a.writes and a.peer is None and local_tensor(graph.tensors[a.tensor]):
                stores.setdefault(a.tensor, []).append(a)
        for tensor, accs in stores.items():
            tiles = [a for a in accs if not is_scalar(a)]
            scalars = [a for a in accs if is_scalar(a)]
            if not tiles or not scalars:
                continue
            tile, scalar = tiles[0], scalars[0]
            yield finding(
                CODE,
                SEVERITY,
                scalar.span,
                f"{task.name} writes single elements of `{tensor}` here and stores tiles into it at line "
                f"{tile.span.line}: tile stores (MTE3) and scalar writes take different store paths with "
                f"no ordering or coherence between them, so the tensor can end up with either path's bytes",
                fix="store the element as a [1, 1] tile (one store path), or write it into a separate tensor",
                related=((tile.span, "the tile store"),),
            )
