"""D114: a remote store can still be in flight when the notify that publishes it goes out.

## What it catches

A window is *published* by a signal when a task reads the window after waiting on that
signal: the read sits after a ``wait`` in the same task, or in a task that descends from a
task with such a wait. For every ``remote_store`` into a window that such a read consumes
(stores whose peer is provably ``rank`` are local and ordered by tensor edges instead),
one of the notifies its guarding waits count must be issued after the store is complete.
dslc accepts two ways (docs/runtime-semantics.md §21.1, rule R11):

- **a grid join**: the storing task is an ancestor of the notifying task -- the runtime
  retires a task only after its writes are done;
- **a copy in the same block**: the store is a plain copy of a tensor region
  (``remote_store win[..] @ p = x[..]``, lowered to a single-shot put that completes before
  the next statement), the notify comes after it in program order, and every block that
  stores into a peer's window also notifies. A block whose store goes to its own rank
  (``@ block`` with ``block == rank``) needs no notify when the local reader descends from the
  storing task: the task edges publish it (``if block != rank { notify ... @ block }``).

It reports the other cases: a ``remote_store`` of a computed value (a local tile, an op
result, a scalar such as a route index) or an atomic ``+=`` remote store followed by a notify in the same task (TSTORE does not drain
before TNOTIFY, PTOAS#872); a notify that precedes the store in program order; blocks that
store but never notify, so the wait releases on their siblings' notifies; and a notifying
task that is not ordered after the storing task at all. The language has no fence
statement, on purpose: the fix is the grid join. Reads not guarded by any wait are not
this rule's business.

## Why it breaks on the device

TSTORE to a peer's window is posted, not completed, when the next instruction issues; a
TNOTIFY right after it can overtake the data. The waiter on the peer then sees the full
count and releases its consumers while rows are still in flight, and they read stale or
partially written windows -- silently wrong results, not a hang. pypto's comm-fence pass
does not fence the AIC and AIV lanes against each other, and #975 ran into exactly this.

## Example

    task scatter spmd(N_LOCAL) on aiv {
      let rows = y[block * R : (block + 1) * R, :] * 2.0
      for p in range(EP) { if p != rank {
        remote_store routed[(rank * N_LOCAL + block) * R : (rank * N_LOCAL + block + 1) * R, :] @ p = rows
        notify arrived[rank] @ p += 1                       # may overtake the rows
      } }
    }

## Use instead

    task scatter spmd(N_LOCAL) on aiv { ...; remote_store routed[...] @ p = rows }
    task publish on aiv after scatter {                     # the grid join drains every store
      for p in range(EP) { if p != rank { notify arrived[rank] @ p += 1 } }
    }

## What dslc verify shows

In the simulator a store lands when the kernel executes it, so a tile still in flight when
its notify goes out (``bad.dsl``) cannot be observed and ``dslc verify`` proves it race-free;
``bad_2.dsl`` and ``bad_3.dsl``, whose notify is not ordered after other tasks' or blocks'
stores, give counterexamples (a reader sees the window before the rows land).

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from lowering.body import LoadV, ScalarType
from lowering.checks.protocol import counting
from lowering.checks.protocol.instances import Uncountable
from lowering.checks.rule import CheckContext, finding
from lowering.checks.signals import executors, run
from lowering.ir import Access, Graph, SignalOp, Task
from lowering.source import Diagnostic
from lowering.symbolic import RANK, EvalError, Sym, evaluate

CODE = "D114"
NAME = "data_published_before_signal"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "a remote store can still be in flight when the notify that publishes it goes out"

OK, UNDRAINED, UNCOVERED, NOTIFY_FIRST, UNORDERED = (
    "ok",
    "undrained",
    "uncovered",
    "notify_first",
    "unordered",
)
_RANK = {OK: 0, UNDRAINED: 1, UNCOVERED: 2, NOTIFY_FIRST: 3, UNORDERED: 4}


@dataclass(frozen=True)
class _Verdict:
    status: str
    notifier: Task | None = None
    notify: SignalOp | None = None
    block: int | None = None


_MAX_BOXES = 20_000


def _boxes(graph: Graph, task: Task, access: Access, env: dict) -> Iterator[tuple[int, int | None, tuple]]:
    """(rank, peer or None when it depends on data, index box) of every instance of ``access``."""
    dims = graph.tensors[access.tensor].dims
    for n, (scoped, rank, _block) in enumerate(
        run(graph, task, access.loops, access.conds, env, lenient=True)
    ):
        if n >= _MAX_BOXES:
            raise Uncountable("too many instances")
        box = []
        for rng, extent in zip(access.region, dims, strict=True):
            try:
                box.append((evaluate(rng.start, scoped), evaluate(rng.stop, scoped) - 1))
            except EvalError:
                box.append((0, (extent or 1 << 40) - 1))
        peer = None
        if access.peer is not None:
            try:
                peer = evaluate(access.peer, scoped)
            except EvalError:
                peer = None
        yield rank, peer, tuple(box)


def _meet(a: tuple, b: tuple) -> bool:
    return all(x0 <= y1 and y0 <= x1 for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def _reads_peer_rows(
    graph: Graph, writer: Task, store: Access, consumer: Task, read: Access, env: dict
) -> bool:
    """Whether ``read`` on some rank can touch rows a peer's ``store`` puts there."""
    try:
        by_dst: dict[int | None, set[tuple]] = {}
        for rank, peer, box in _boxes(graph, writer, store, env):
            if peer != rank:
                by_dst.setdefault(peer, set()).add(box)
        anywhere = by_dst.get(None, set())
        for rank, _peer, box in _boxes(graph, consumer, read, env):
            if any(_meet(box, other) for other in by_dst.get(rank, set()) | anywhere):
                return True
        return False
    except (Uncountable, EvalError):
        return True


def _is_copy(task: Task, store: Access) -> bool:
    stmt = counting.remote_store_of(task, store)
    return stmt is not None and not stmt.atomic and isinstance(stmt.value, LoadV) and not stmt.value.local


def _what_is_stored(task: Task, store: Access) -> str:
    stmt = counting.remote_store_of(task, store)
    if stmt is not None and stmt.atomic:
        return "atomically adds into"
    if stmt is not None and isinstance(getattr(stmt.value, "type", None), ScalarType):
        return "remote-stores a computed scalar into"
    return "remote-stores a computed tile into"


def _uncovered_block(
    graph: Graph, task: Task, store: Access, notify: SignalOp, env: dict, local_ordered: bool
) -> int | None:
    """A block that may run ``store`` into a peer's window but never runs ``notify`` (rank 0
    and its peers alike). A store whose peer is the storing rank itself needs no notify when
    ``local_ordered`` (the local reader descends from the storing task)."""
    try:
        storing = _storing_blocks(graph, task, store, env, local_ordered)
        notifying = executors(graph, task, notify.loops, notify.conds, env)
    except Uncountable:
        return None
    missing = sorted(storing - notifying)
    return missing[0][1] if missing else None


def _storing_blocks(graph: Graph, task: Task, store: Access, env: dict, local_ordered: bool) -> set:
    if not local_ordered or store.peer is None:
        return executors(graph, task, store.loops, store.conds, env, lenient=True)
    out = set()
    for scoped, rank, block in run(graph, task, store.loops, store.conds, env, lenient=True):
        try:
            if evaluate(store.peer, scoped) == rank:
                continue  # into its own window: the task edges publish it
        except EvalError:
            pass
        out.add((rank, block))
    return out


def _verdict(
    graph: Graph,
    ctx: CheckContext,
    writer: Task,
    store: Access,
    feeders: list[tuple[Task, SignalOp]],
    env: dict,
    consumer: Task,
) -> _Verdict:
    best = _Verdict(UNORDERED, *feeders[0])
    anc = ctx.ancestors
    for notifier, notify in feeders:
        if writer.name in anc[notifier.name]:
            return _Verdict(OK)
        if notifier.name != writer.name:
            continue
        if notify.order < store.order:
            v = _Verdict(NOTIFY_FIRST, notifier, notify)
        elif not _is_copy(writer, store):
            v = _Verdict(UNDRAINED, notifier, notify)
        elif (
            b := _uncovered_block(graph, writer, store, notify, env, writer.name in anc[consumer.name])
        ) is not None:
            v = _Verdict(UNCOVERED, notifier, notify, b)
        else:
            return _Verdict(OK)
        if _RANK[v.status] < _RANK[best.status]:
            best = v
    return best


def _message(
    writer: Task, store: Access, v: _Verdict, consumer: Task, wait_task: Task, wait: SignalOp
) -> tuple[str, str]:
    win = store.tensor
    if wait_task.name == consumer.name:
        consumed = f"{consumer.name} waits on {wait.signal} and then reads {win}"
    else:
        consumed = f"{wait_task.name} waits on {wait.signal} and then {consumer.name} reads {win}"
    if v.status == UNDRAINED:
        n = v.notify
        return (
            f"{writer.name} {_what_is_stored(writer, store)} {win} and then notifies {n.signal} (line {n.span.line}) "
            f"from the same block; a remote_store that is not a plain copy does not drain before the notify "
            f"(PTOAS#872), so on the peer "
            f"{consumed} while the rows may still be in flight",
            f"notify {n.signal} from a task `after {writer.base}` (a grid join) instead of from {writer.name}",
        )
    if v.status == UNCOVERED:
        n = v.notify
        return (
            f"block {v.block} of {writer.name} remote-stores into {win} but never runs the notify on {n.signal} "
            f"(line {n.span.line}); the wait on the peer releases on its sibling blocks' notifies, so {consumed} "
            f"before block {v.block}'s rows are written",
            f"notify {n.signal} from a task `after {writer.base}` (a grid join), or from every storing block",
        )
    if v.status == NOTIFY_FIRST:
        n = v.notify
        return (
            f"{writer.name} notifies {n.signal} (line {n.span.line}) before it remote-stores into {win}: the signal "
            f"announces data that is not written yet, so on the peer {consumed} too early",
            f"move the notify after the store, or into a task `after {writer.base}`",
        )
    who = f" ({v.notifier.name})" if v.notifier is not None else ""
    return (
        f"{writer.name} remote-stores into {win}, which {consumed}, but the task that notifies {wait.signal}{who} is "
        f"not ordered after {writer.name}: the notify can go out before the rows are written",
        f"add `after {writer.base}` to the task that notifies {wait.signal}",
    )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    anc = ctx.ancestors
    writers: dict[str, list[tuple[Task, Access]]] = {}
    for t in graph.tasks:
        for a in t.accesses:
            if a.peer is not None and a.writes and a.peer != Sym("rank", RANK):
                writers.setdefault(a.tensor, []).append((t, a))
    feeder_cache: dict[tuple[str, int], list[tuple[Task, SignalOp]]] = {}

    def feeders_of(t: Task, w: SignalOp) -> list[tuple[Task, SignalOp]]:
        key = (t.name, w.order)
        if key not in feeder_cache:
            names = counting.feeders(graph, ctx, t, w, env)
            feeder_cache[key] = [
                (graph.task(n), op)
                for n in sorted(names)
                for op in graph.task(n).notifies
                if op.signal == w.signal and op.op == "add"
            ]
        return feeder_cache[key]

    reach = ctx.reach
    waiting = [i for i, t in enumerate(graph.tasks) if t.waits]  # submission indices
    by_name = sorted(graph.tasks[i].name for i in waiting)

    def nearest_guards(consumer: Task) -> Iterator[tuple[Task, SignalOp]]:
        """The waits ordered before ``consumer``: its own, then its waiting ancestors, closest first."""
        yield from ((consumer, w) for w in consumer.waits)
        for j in reversed(waiting[: bisect_left(waiting, reach.position[consumer.name])]):
            t = graph.tasks[j]
            if reach.before(t.name, consumer.name):
                yield from ((t, w) for w in t.waits)

    def published(writer: Task, store: Access, live: Iterable[tuple[Task, SignalOp]], consumer: Task) -> bool:
        """Some guarding wait is fed by a notify ordered after the store (the common case)."""
        for wait_task, wait in live:
            fed = feeders_of(wait_task, wait)
            if fed and _verdict(graph, ctx, writer, store, fed, env, consumer).status == OK:
                return True
        return False

    reported: set = set()
    for consumer in graph.tasks:
        reads = [a for a in consumer.accesses if a.mode == "read" and a.tensor in writers]
        if not reads:
            continue
        guards: list[tuple[Task, SignalOp]] | None = None
        for read in reads:

            def is_live(tw: tuple[Task, SignalOp], read: Access = read, name: str = consumer.name) -> bool:
                return tw[0].name != name or tw[1].order < read.order

            for writer, store in writers[read.tensor]:
                if (
                    store.span in reported
                    or writer.name == consumer.name
                    or consumer.name in anc[writer.name]
                ):
                    continue
                if published(writer, store, filter(is_live, nearest_guards(consumer)), consumer):
                    continue  # a verdict of OK wins over every other guard
                if guards is None:
                    guards = [(consumer, w) for w in consumer.waits]
                    guards += [
                        (graph.task(a), w)
                        for a in reach.ancestors_among(consumer.name, by_name)
                        for w in graph.task(a).waits
                    ]
                live = [tw for tw in guards if is_live(tw)]
                best: tuple[_Verdict, Task, SignalOp] | None = None
                for wait_task, wait in live:
                    fed = feeders_of(wait_task, wait)
                    if not fed:
                        continue  # nothing notifies that wait: D106
                    v = _verdict(graph, ctx, writer, store, fed, env, consumer)
                    if best is None or _RANK[v.status] < _RANK[best[0].status]:
                        best = (v, wait_task, wait)
                if best is None:
                    continue
                v, wait_task, wait = best
                if v.status == OK or not _reads_peer_rows(graph, writer, store, consumer, read, env):
                    continue
                reported.add(store.span)
                message, fix = _message(writer, store, v, consumer, wait_task, wait)
                related = [
                    (read.span, f"{consumer.name} reads {read.tensor}"),
                    (wait.span, "the guarding wait"),
                ]
                if v.notify is not None:
                    related.insert(0, (v.notify.span, "the notify that publishes it"))
                yield finding(CODE, SEVERITY, store.span, message, fix=fix, related=tuple(related))
