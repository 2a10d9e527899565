"""What the validity analysis knows and reports, and the arithmetic of well-formed sort chains.

``Abs`` is what is known about one tile value while a body is interpreted; a ``Chain`` is a
sort32 + mrgsort chain over one row; per task the analysis reports its stores with their
declared valid extents (``StoreFact``) and what happened to its sort chains (``SortEvent``).
The sort rules use the stage arithmetic to say which merge stages a chain is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lowering import body as ir_body
from lowering.ir import Condition, Loop
from lowering.source import Span
from lowering.symbolic import Expr


@dataclass(frozen=True)
class Chain:
    """A sort32 + mrgsort chain over one row, at one parameter point."""

    records: int  # W: records in the row (2W columns)
    run: int  # records per sorted run after the stages so far
    stages: tuple[int, ...]  # block_len of each mrgsort
    broken: bool  # a stage violated the ISA or the run-length order (S302)
    finite: int  # upper bound of finite candidates in the row
    finite_text: str  # "INDEXER_SCORE_CAP=1024" or a number
    sort_span: Span
    stage_spans: tuple[Span, ...] = ()

    @property
    def chain_text(self) -> str:
        if not self.stages:
            return "sort32"
        parts = ", ".join(str(b) if b else "merge" for b in self.stages)  # 0: a format-2 merge
        return f"sort32+mrgsort({parts})"


@dataclass(frozen=True)
class Abs:
    """What is known about a tile value."""

    finite: Expr | None = None  # finite (valid) leading columns; None: every column
    rows: Expr | None = None  # valid rows, from valid(x, rows, cols)
    marked: bool = False  # the extent comes from valid()/fillpad() (a declaration)
    chain: Chain | None = None
    origin: tuple[Expr, ...] = ()  # expressions the extent came from (to name a constant)
    # The readout event this value's slice recorded (the head of a sorted row): withdrawn when
    # the value turns out to be an operand of a format-2 merge, a list rather than a readout.
    readout: SortEvent | None = None


@dataclass(frozen=True)
class StoreFact:
    task: str
    tensor: str
    region: tuple[ir_body.Range, ...]
    finite: Expr | None  # declared valid columns of the stored tile (valid/fillpad), else None
    rows: Expr | None  # declared valid rows (valid(x, rows, cols)), else None
    loops: tuple[Loop, ...]
    conds: tuple[Condition, ...]
    span: Span


@dataclass(frozen=True)
class SortEvent:
    kind: str  # isa | order | readout | row
    span: Span  # statement
    task: str
    chain: Chain
    detail: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass
class TaskFacts:
    stores: list[StoreFact] = field(default_factory=list)
    sorts: list[SortEvent] = field(default_factory=list)


def needed_stages(chain: Chain, candidates: int) -> list[int]:
    """Block lengths to append so that one run covers ``candidates`` records."""
    out = []
    run = chain.run
    while run < candidates and run < chain.records:
        out.append(2 * run)
        run *= 4
    return out


def run_after(stages: int) -> int:
    """Records per sorted run after sort32 and ``stages`` well-formed merge stages."""
    return 32 * 4**stages


def stages_for(candidates: int) -> int:
    """Fewest well-formed merge stages after sort32 whose first run holds ``candidates``."""
    if candidates <= 32:
        return 0
    return math.ceil(math.log(candidates / 32, 4) - 1e-12)
