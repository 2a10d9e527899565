"""Chrome-trace (Perfetto-compatible) export of a simulated run.

Layout: one process per rank, two threads per core (its running slot and its pending slot),
named ``AIV3 running`` / ``AIV3 pending``.  Times are abstract simulator units written as
microseconds.  Slices (``"ph": "X"``), distinguished by ``cat``:

* ``block``  - a block from start to end on the running slot of its first core (one per block
  that finished, so the count equals ``RunResult.blocks_run``); ``lane`` - the same block on the
  other cores of a MIX cluster;
* ``spin``   - ``spin data_arrived[1]``: a wait holding the core, nested inside its block;
* ``barrier``- time spent at a hard barrier;
* ``gated``  - an early-staged block holding a slot until the doorbell;
* ``pending``- ``parked <task>[b]``: a block sitting in a pending slot;
* ``stuck``  - a block that never finished (deadlock), cut at the stop time.

Flow events (``"s"``/``"f"``, ``cat: dep``) link the end of a producer's last block to the start
of its consumer's first block.  The file is written to a temporary name and renamed, so a
reader never sees half a trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.files import write_text
from runtime.machine import DONE, SPIN, Block, TaskInst
from runtime.memory import format_cell

if TYPE_CHECKING:  # pragma: no cover
    from runtime.scheduler import Engine


def _x(name: str, cat: str, pid: int, tid: int, t0: float, t1: float, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "ts": t0,
        "dur": max(0, t1 - t0),
        "args": args,
    }


def _block_events(b: Block, now: float) -> list[dict[str, Any]]:
    inst = b.inst
    pid = inst.rank
    args = {"task": inst.spec.name, "block": b.index, "rank": pid, "round": inst.round + 1}
    ev = []
    run_from: list[float | None] = []
    for i, c in enumerate(b.cores):
        if b.slot0[i] == "pending":
            until = b.promoted[i] if b.promoted[i] is not None else now
            ev.append(_x(f"parked {b.name}", "pending", pid, c.tid + 1, b.placed_at, until, dict(args)))
            run_from.append(b.promoted[i])
        else:
            run_from.append(b.placed_at)
    if b.staged_gated:
        bell = b.doorbell if b.doorbell is not None else now
        waiting = [p.spec.name for p in inst.producers]
        for i, c in enumerate(b.cores):
            if b.slot0[i] == "pending":
                end_p = min(bell, run_from[i] if run_from[i] is not None else now)
                if end_p > b.placed_at or bell == b.placed_at:
                    ev.append(
                        _x(
                            "gated",
                            "gated",
                            pid,
                            c.tid + 1,
                            b.placed_at,
                            end_p,
                            {**args, "producers": waiting},
                        )
                    )
            rf = run_from[i]
            if rf is not None and rf <= bell:
                ev.append(_x("gated", "gated", pid, c.tid, rf, bell, {**args, "producers": waiting}))
    if b.start is not None:
        end = b.end if b.state == DONE else now
        cat = "block" if b.state == DONE else "stuck"
        c0 = b.cores[0]
        ev.append(_x(b.name, cat, pid, c0.tid, b.start, end, {**args, "cores": [c.name for c in b.cores]}))
        for c in b.cores[1:]:
            ev.append(_x(b.name, "lane", pid, c.tid, b.start, end, dict(args)))
        for t0, t1, cell in b.spins:
            ev.append(_x(f"spin {cell}", "spin", pid, c0.tid, t0, t1, dict(args)))
        if b.state == SPIN and b.wait is not None:
            cell = format_cell(b.wait.signal, b.wait.key)
            ev.append(_x(f"spin {cell}", "spin", pid, c0.tid, b.spin_start, now, {**args, "stuck": True}))
        for t0, t1, gen in b.barriers:
            ev.append(_x("barrier", "barrier", pid, c0.tid, t0, t1, {**args, "barrier": gen}))
    return ev


def _flows(insts: list[TaskInst]) -> list[dict[str, Any]]:
    ev = []
    fid = 0
    for inst in insts:
        started = [b for b in inst.blocks if b.start is not None]
        if not started:
            continue
        first = min(started, key=lambda b: (b.start, b.index))
        for p in inst.producers:
            ended = [b for b in p.blocks if b.state == DONE]
            if not ended:
                continue
            last = max(ended, key=lambda b: (b.end, b.index))
            fid += 1
            common = {"name": "dep", "cat": "dep", "id": fid}
            ev.append({**common, "ph": "s", "pid": p.rank, "tid": last.cores[0].tid, "ts": last.end})
            ev.append(
                {
                    **common,
                    "ph": "f",
                    "bp": "e",
                    "pid": inst.rank,
                    "tid": first.cores[0].tid,
                    "ts": first.start,
                }
            )
    return ev


def build_trace(eng: Engine) -> dict[str, Any]:
    """The Chrome-trace document of ``eng``'s run (complete or stopped by a deadlock)."""
    meta: list[dict[str, Any]] = []
    for rs in eng.ranks:
        r = rs.rank
        meta.append({"name": "process_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": f"rank {r}"}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": r, "tid": 0, "args": {"sort_index": r}})
        for c in rs.cores:
            for tid, slot in ((c.tid, "running"), (c.tid + 1, "pending")):
                meta.append(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": r,
                        "tid": tid,
                        "args": {"name": f"{c.name} {slot}"},
                    }
                )
                meta.append(
                    {
                        "name": "thread_sort_index",
                        "ph": "M",
                        "pid": r,
                        "tid": tid,
                        "args": {"sort_index": tid},
                    }
                )
    events = []
    for inst in eng.insts:
        for b in inst.blocks:
            events += _block_events(b, eng.now)
    events.sort(key=lambda e: (e["ts"], e["pid"], e["tid"]))
    return {
        "traceEvents": meta + events + _flows(eng.insts),
        "displayTimeUnit": "ms",
        "otherData": {
            "program": eng.program.name,
            "policy": eng.policy.name,
            "seed": eng.seed,
            "ranks": eng.nranks,
            "rounds": eng.rounds,
            "makespan": eng.makespan,
            "blocks_run": eng.blocks_run,
            "time_unit": "abstract simulator units (shown as us)",
        },
    }


def write_trace(path: str | Path, doc: dict[str, Any]) -> Path:
    """Write ``doc`` as JSON to ``path`` (through ``runtime.files.write_text``)."""
    write_text(path, json.dumps(doc, separators=(",", ":")))
    return Path(path)
