"""The task-graph IR: the only thing checks, lowering passes and backends see.

A :class:`Graph` is one layer elaborated at one parameter point. It keeps the symbolic
form of everything a rule may have to re-evaluate for other admissible values (grids,
regions, trip counts, signal thresholds) next to the value at this point. Task arrays and
called layers are already expanded: ``mm[3]`` and ``dispatch.push`` are tasks of their own,
as the runtime would see them. Edges carry the reason they exist. What the layer is
parameterised by (parameters, constants, runtime scalars and their admissible domains) is
declared in :mod:`lowering.parameters`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field

from lowering.body import Range, Stmt
from lowering.parameters import Assertion, Const, Guard, Param, Scalar
from lowering.source import Span
from lowering.symbolic import EvalError, Expr, evaluate

CORE_KINDS = ("aic", "aiv", "mix")
TENSOR_KINDS = ("input", "output", "inout", "scratch", "window", "signal")
FLOAT_DTYPES = ("f16", "bf16", "f32")
INT_DTYPES = ("i8", "u8", "i16", "i32", "u32", "i64")
#: The values an integer dtype holds (inclusive bounds).
INT_RANGES = {
    "i8": (-(2**7), 2**7 - 1),
    "u8": (0, 2**8 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "u32": (0, 2**32 - 1),
    "i64": (-(2**63), 2**63 - 1),
}
DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)
DTYPE_BYTES = {
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "i8": 1,
    "u8": 1,
    "i16": 2,
    "i32": 4,
    "u32": 4,
    "i64": 8,
    "bool": 1,
}


_POINTS_KEPT = 1024  # admissible points a graph keeps for the rules that revisit them


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[Expr, ...]
    dims: tuple[int | None, ...]  # at this parameter point; None when it depends on a runtime scalar
    kind: str  # one of TENSOR_KINDS
    manual_dep: bool
    span: Span
    # A view (PyPTO ``reshape``/``view`` of one buffer): the tensor whose bytes this one
    # names, and the byte offset of element 0 in it. The language has no views, so only
    # graphs read from PyPTO set these; rule R502 checks accesses through two views.
    view_of: str | None = None
    view_offset: int = 0
    # False when the reader could not evaluate where the view starts (``view_offset`` is then
    # 0, a placeholder): rule R502 does not judge byte overlaps through it.
    view_placed: bool = True
    # The value a PyPTO ``pl.create_tensor(..., init_value=v)`` fills the buffer with when it is
    # created (before any task that uses it); None: not initialised.
    init_value: float | None = None
    # The task whose execution allocates this buffer (a PyPTO tile that outlives its ``pl.at``
    # scope becomes a runtime-allocated output of that task); its users wait for the creator
    # (docs/runtime-semantics.md §3, creator retention). None: allocated before the layer runs.
    created_by: str | None = None

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class Loop:
    """An enclosing loop of an access or signal op, inside a task body."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    kind: str
    span: Span


@dataclass(frozen=True)
class Condition:
    """An enclosing ``if`` (already negated for ``else`` branches)."""

    expr: Expr
    span: Span


@dataclass(frozen=True)
class Access:
    tensor: str
    mode: str  # read | write | atomic | anchor  (anchor: a read whose value is unused)
    region: tuple[Range, ...]
    dtype: str
    loops: tuple[Loop, ...]
    conds: tuple[Condition, ...]
    span: Span
    order: int  # program order inside the body
    peer: Expr | None = None  # remote_store destination rank
    # Keyword-only from here on: a positional argument meant for one of these once landed in
    # the other; each is named at every construction.
    _: KW_ONLY
    name: str = ""  # the name a called layer's body used ("c.a"), when a call binds it to ``tensor``
    # A whole tensor taken for an access the reader cannot see into (an argument of a PyPTO
    # extern kernel or of an op it does not know, a store whose offsets it cannot evaluate):
    # every block is taken to touch all of it, so which elements one block touches is unknown.
    opaque: bool = False

    @property
    def writes(self) -> bool:
        return self.mode in ("write", "atomic")


@dataclass(frozen=True)
class SignalOp:
    kind: str  # notify | wait
    signal: str
    index: tuple[Expr, ...]
    loops: tuple[Loop, ...]
    conds: tuple[Condition, ...]
    span: Span
    order: int
    peer: Expr | None = None  # notify: destination rank
    op: str = "add"  # notify: add | set
    value: Expr | None = None  # notify: the value deposited
    cmp: str = "ge"  # wait: ge | eq
    expected: Expr | None = None  # wait: threshold, may involve runtime scalars (epoch)


@dataclass(frozen=True)
class BarrierOp:
    soft: bool
    loops: tuple[Loop, ...]
    conds: tuple[Condition, ...]
    span: Span
    order: int


@dataclass(frozen=True)
class Predicate:
    """``when tensor[index] OP value``: evaluated at dispatch; false retires the task."""

    tensor: str
    index: tuple[Expr, ...]
    cmp: str
    value: Expr
    span: Span


@dataclass(frozen=True)
class DepRef:
    """An explicit ``after`` edge as written (resolved to task names). ``host``: an ordering
    the orchestrator makes by waiting (a PyPTO host-side ``pl.read``) -- the task is submitted
    after ``target`` completed -- not a dependency the runtime tracks."""

    target: str
    span: Span
    host: bool = False


@dataclass
class Task:
    name: str  # instance name: "linear", "mm[3]", "dispatch.push"
    base: str  # template name without index: "mm", "dispatch.push"
    index: int | None
    grid: Expr  # symbolic block count
    blocks: int  # at this parameter point
    core: str
    core_explicit: bool
    early_resolve: bool
    sync_start: bool
    manual: bool
    in_sequential_loop: bool  # declared under a layer-level `for ... in range` (R-seq)
    predicate: Predicate | None
    after: tuple[DepRef, ...]
    accesses: tuple[Access, ...]
    signals: tuple[SignalOp, ...]
    barriers: tuple[BarrierOp, ...]
    ops: frozenset[str]
    body: tuple[Stmt, ...]
    span: Span
    header_span: Span
    order: int
    # Declared directions of the task's tensor arguments, before Out -> InOut promotion:
    # "in" | "out" | "inout" | "nodep". Only graphs read from PyPTO set it (kernel calls take
    # their directions from parameter annotations, pl.no_dep / no_dep_args make NoDep); a
    # tensor not listed here gets the direction its accesses imply (lowering.edges).
    arg_tags: dict[str, str] | None = None
    # The arms of orchestration branches on run-time values the task was submitted under, as
    # (branch instance, arm) from the outermost: each execution of such an ``if`` takes one arm,
    # so two tasks on different arms of one instance never run in the same dispatch. Only
    # graphs read from PyPTO set it (a DSL layer-level ``if`` is decided at elaboration).
    branch: tuple[tuple[int, int], ...] = ()
    # The task stands for an unknown number of tasks: the PyPTO reader read it once from the
    # orchestration loops named here (ids of loop executions whose trip count it cannot evaluate:
    # ``name[*]``). A wait inside the same loops sees one instance per iteration; any other wait
    # cannot count its notifies (``counting``).
    repeated: tuple[int, ...] = ()

    def excludes(self, other: Task) -> bool:
        """``self`` and ``other`` sit on different arms of one branch instance: in any one
        dispatch at most one of them is submitted."""
        arms = dict(self.branch)
        return any(arms.get(instance, arm) != arm for instance, arm in other.branch)

    @property
    def waits(self) -> tuple[SignalOp, ...]:
        return tuple(s for s in self.signals if s.kind == "wait")

    @property
    def notifies(self) -> tuple[SignalOp, ...]:
        return tuple(s for s in self.signals if s.kind == "notify")


EDGE_KINDS = ("explicit", "raw", "waw", "creator", "host")


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    kind: str  # one of EDGE_KINDS
    span: Span  # where the edge comes from (the `after` reference or the consumer's access)
    tensor: str | None = None
    region: str | None = None  # producer's footprint that overlaps, as text
    anchor: bool = False  # the consumer access is an anchor read

    @property
    def reason(self) -> str:
        if self.kind == "explicit":
            return "after"
        if self.kind == "host":
            return "submitted after the host waited for it"
        if self.kind == "creator":
            return f"creator of {self.tensor}"
        what = "anchor read" if self.anchor else self.kind.upper()
        return f"{what} {self.tensor}{self.region or ''}"


@dataclass(frozen=True)
class Alias:
    """A call that binds one tensor to several tensors of the called layer: their accesses
    name one buffer under different names (``call c = sub(a = buf, b = buf)``)."""

    tensor: str  # the caller's tensor (full name)
    names: tuple[str, ...]  # the called layer's names for it, with the call prefix ("c.a", "c.b")
    span: Span  # the call


@dataclass(frozen=True)
class Reduction:
    """The summation tree of one split reduction the compiler knows (rule N203, R5).

    ``splits`` partials, each the ascending fold of ``chunks`` separately rounded chunk
    values (None when not known, e.g. a cube ``matmul_acc`` chain with ``k_group``, whose
    chunk boundaries do not round), summed across splits in ``order`` in ``dtype`` (the
    partials' dtype). ``source`` is ``reduce_sum`` (the lowering wrote the partials and the
    reducing ``task``) or ``declared`` (a layer-level ``reduction`` statement describing
    hand-written partials and reduce; taken as stated).
    """

    tensor: str  # the reduced tensor (the reduce_sum's store target)
    splits: Expr  # symbolic split count
    chunks: Expr | None  # chunks folded ascending inside each split, when known
    dtype: str  # accumulator dtype
    span: Span  # the reduce_sum (or the reduction statement)
    order: str = "ascending"  # cross-split order: ((p0 + p1) + p2) + ...
    task: str | None = None  # the reducing task of a reduce_sum
    source: str = "reduce_sum"  # reduce_sum | declared


def structure_holds(structure: tuple[tuple[Expr, int], ...], env: dict[str, int]) -> bool:
    """Whether every layer decision of ``structure`` takes its recorded value at ``env``."""
    try:
        return all(evaluate(e, env) == v for e, v in structure)
    except EvalError:
        return False


@dataclass
class Graph:
    name: str
    file: str
    span: Span
    params: dict[str, Param]
    consts: dict[str, Const]
    assertions: list[Assertion]
    scalars: dict[str, Scalar]
    tensors: dict[str, Tensor]
    tasks: list[Task]
    ranks: Expr  # EP world size (``ranks EP``); 1 for single-rank layers
    nranks: int
    edges: list[Edge] = field(default_factory=list)
    cross_round_edges: list[Edge] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)  # host-side request guards, in source order
    derived: dict[str, Scalar] = field(default_factory=dict)  # ``scalar n = expr`` (not kernel args)
    golden: str | None = None  # path of the NumPy reference module, relative to ``file``
    golden_span: Span | None = None  # the ``golden "..."`` declaration
    reductions: list[Reduction] = field(default_factory=list)  # reduction trees, in source order
    # The layer-level decisions this graph was elaborated with: each layer ``if`` condition and
    # each layer ``for`` bound, with its value here. Another parameter point where every one of
    # them has the same value elaborates to the same tasks (the graph's *structure class*);
    # elsewhere the layer has other tasks, and ``admissible_points`` leaves those points out.
    structure: tuple[tuple[Expr, int], ...] = ()
    aliases: tuple[Alias, ...] = ()  # tensors a call binds under several names (rule R502)
    # What the runtime scalar of a wait threshold counts. A dslc layer passes the round number
    # (``rounds``: docs/lint.md). A PyPTO program passes a 1-based *call id* that restarts at
    # every dispatch of the program (``calls``, docs/runtime-semantics.md §7.3): on a cell
    # the program clears every dispatch, the first call's wait is judged at epoch 1 only.
    epoch_counts: str = "rounds"
    # Why tasks the program submits are missing from this graph (the PyPTO reader stops at a task
    # cap), or "" when it is whole. Rules that count notifies do not judge an incomplete graph: a
    # missing task can be the notifier, the clear or the retire a count needs.
    incomplete: str = ""

    def env(self) -> dict[str, int]:
        """Values of parameters and constants at this point (for ``symbolic.evaluate``)."""
        env = {p.name: p.value for p in self.params.values()}
        env.update({c.name: c.value for c in self.consts.values()})
        return env

    def env_at(self, point: dict[str, int]) -> dict[str, int]:
        """Parameter values of ``point`` plus every constant re-evaluated there."""
        env = dict(point)
        for c in self.consts.values():
            env[c.name] = evaluate(c.expr, env)
        return env

    def same_structure(self, env: dict[str, int]) -> bool:
        """Whether ``env`` elaborates to this graph's tasks (see ``structure``)."""
        return structure_holds(self.structure, env)

    def scalar_ranges(self, env: dict[str, int] | None = None) -> dict[str, tuple[int, int]]:
        """(lo, hi) of each ranged runtime scalar, at this graph's point or at ``env``."""
        out = {}
        for s in self.scalars.values():
            domain = s.domain if env is None else s.domain_at(env)
            if domain is not None and domain.size:
                out[s.name] = (domain.low, domain.high)
        return out

    def task(self, name: str) -> Task:
        return self._by_name()[name]

    def _by_name(self) -> dict[str, Task]:
        cache = self.__dict__.get("_task_index")
        if cache is None or len(cache) != len(self.tasks):
            cache = {t.name: t for t in self.tasks}
            self.__dict__["_task_index"] = cache
        return cache

    def predecessors(self, host: bool = True) -> dict[str, set[str]]:
        """Direct predecessors; ``host=False`` leaves out host orderings (``DepRef.host``)."""
        preds: dict[str, set[str]] = {t.name: set() for t in self.tasks}
        for e in self.edges:
            if host or e.kind != "host":
                preds[e.dst].add(e.src)
        return preds

    def ancestors(self) -> dict[str, frozenset[str]]:
        """Transitive predecessors of each task (tasks are in a topological order)."""
        preds = self.predecessors()
        out: dict[str, frozenset[str]] = {}
        for t in self.tasks:
            acc: set[str] = set()
            for p in preds[t.name]:
                acc.add(p)
                acc |= out[p]
            out[t.name] = frozenset(acc)
        return out

    def admissible_points(self, limit: int = 4096, any_structure: bool = False) -> Iterator[dict[str, int]]:
        """Environments (parameters and constants) of every admissible parameter point of
        this graph's structure class (of every class with ``any_structure``).

        A point is admissible when each ranged parameter lies in its domain and every
        layer ``assert`` holds there: asserts narrow the domains, they do not fail them.
        A point whose layer ``if``s or layer loop bounds take other values than here has
        other tasks: it belongs to another elaboration of the layer (``structure``).

        When the product exceeds ``limit``, each domain is thinned to its extremes and a
        spread of inner values; checks that rely on this say so in their docs.

        The points are kept on the graph (up to ``_POINTS_KEPT`` of them; the rules ask for
        them again and again), and every caller gets its own copy of each. Code that changes
        the parameters, constants, asserts or structure of a graph in place afterwards (the
        derivation of capacities) calls :meth:`forget_points`.
        """
        cache = self.__dict__.setdefault("_points_kept", {})
        shape = (len(self.params), len(self.consts), len(self.assertions), len(self.structure))
        key = (limit, any_structure, shape)
        kept = cache.get(key)
        if kept is None:
            points = self._admissible_points(limit, any_structure)
            kept = list(itertools.islice(points, _POINTS_KEPT + 1))
            if len(kept) > _POINTS_KEPT:  # too many to keep: listed afresh at each call
                return itertools.chain((dict(e) for e in kept), points)
            cache[key] = kept
        return (dict(env) for env in kept)

    def forget_points(self) -> None:
        """Drop the admissible points kept by :meth:`admissible_points`."""
        self.__dict__.pop("_points_kept", None)

    def _admissible_points(self, limit: int, any_structure: bool) -> Iterator[dict[str, int]]:
        ranged = [p for p in self.params.values() if p.domain is not None]
        base = {p.name: p.value for p in self.params.values()}
        total = 1
        for p in ranged:
            total *= max(p.domain.size, 1)  # type: ignore[union-attr]
        per = max(2, int(limit ** (1 / len(ranged)))) if total > limit and ranged else total
        domains = [p.domain.spread(per) for p in ranged]  # type: ignore[union-attr]
        for combo in itertools.product(*domains):
            point = dict(base)
            point.update({p.name: v for p, v in zip(ranged, combo, strict=True)})
            try:
                env = self.env_at(point)
                if all(evaluate(a.cond, env) for a in self.assertions) and (
                    any_structure or self.same_structure(env)
                ):
                    yield env
            except EvalError:
                continue
