"""Properties of the scheduler over random task graphs (no waits, no barriers).

Without spinning waits or barriers the runtime's guards must make every graph finish: a gated
consumer is staged only once its flagged producers have every block in a slot, so the producers
always run (docs/runtime-semantics.md §6).  On top of that, every schedule must respect the slot
rules.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.program import Program, TaskSpec
from runtime.simulator import simulate

CORES = (2, 4)
CAP = {"aic": 2, "aiv": 4, "mix": 2}


def noop(ctx):
    return None


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 7))
    tasks = []
    for i in range(n):
        shape = draw(st.sampled_from(["aic", "aiv", "mix"]))
        sync = draw(st.booleans()) and draw(st.booleans())
        blocks = draw(st.integers(1, CAP[shape])) if sync else draw(st.integers(0, 10))
        deps = tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
        prev = tuple(sorted(draw(st.sets(st.integers(0, n - 1), max_size=2))))
        pred = None
        if draw(st.integers(0, 5)) == 0:
            keep = draw(st.booleans())
            pred = (lambda m: True) if keep else (lambda m: False)
        tasks.append(
            TaskSpec(
                f"t{i}",
                shape,
                blocks,
                noop,
                deps=deps,
                prev_round_deps=prev,
                early_resolve=draw(st.booleans()),
                sync_start=sync,
                predicate=pred,
                cost=draw(st.integers(0, 4)),
            )
        )
    return Program("random_graph", (), (), tuple(tasks))


@settings(max_examples=150, deadline=None)
@given(
    prog=graphs(),
    policy=st.sampled_from(["fifo", "random", "adversarial"]),
    seed=st.integers(0, 1000),
    rounds=st.integers(1, 2),
    cap=st.sampled_from([2, 64]),
)
def test_random_graphs_finish_and_respect_slot_rules(prog, policy, seed, rounds, cap):
    res = simulate(prog, ranks=2, cores=CORES, policy=policy, seed=seed, rounds=rounds, early_capacity=cap)
    by_task: dict[tuple[str, int, int], list] = {}
    for r in res.schedule:
        by_task.setdefault((r.task, r.rank, r.round), []).append(r)
    retired = {t.name for t in prog.tasks if t.predicate is not None and not t.predicate(None)}
    expected = sum(t.blocks for t in prog.tasks if t.name not in retired) * 2 * rounds
    assert res.blocks_run == len(res.schedule) == expected

    def done_at(name: str, rank: int, rnd: int) -> int:
        recs = by_task.get((name, rank, rnd), [])
        return max((r.end for r in recs), default=None)

    per_core: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for r in res.schedule:
        spec = next(t for t in prog.tasks if t.name == r.task)
        # producers (same round, previous round) finished before this block started
        prods = [(prog.tasks[d].name, r.round) for d in spec.deps]
        if r.round > 0:
            prods += [(prog.tasks[d].name, r.round - 1) for d in spec.prev_round_deps]
        ends = [done_at(n, r.rank, rr) for n, rr in prods]
        ends = [e for e in ends if e is not None]
        assert all(r.start >= e for e in ends)
        if r.gated:
            # staged early, then released exactly by the last producer's completion
            assert r.doorbell is not None and r.placed_at <= r.doorbell and r.start >= r.doorbell
            assert any(
                prog.tasks[d].early_resolve for d in spec.deps + (spec.prev_round_deps if r.round else ())
            )
            assert spec.predicate is None
        if spec.sync_start:
            assert r.slot == "running"
        held = r.placed_at if r.slot == "running" else r.promoted_at
        assert held is not None and held >= r.placed_at and r.end >= r.start >= held
        if len(r.cores) == 1:  # MIX blocks may hold some cores before they start: checked below
            per_core.setdefault((r.rank, r.cores[0]), []).append((held, r.end))
        else:
            assert r.cores[0].startswith("AIC") and len(r.cores) == 3
            for c in r.cores:
                per_core.setdefault((r.rank, c), []).append((r.start, r.end))
    for ivs in per_core.values():
        ivs.sort()
        for (_s0, e0), (s1, _e1) in zip(ivs, ivs[1:], strict=False):
            assert s1 >= e0
    # sync cohorts start all together
    for (name, _rank, _rnd), recs in by_task.items():
        spec = next(t for t in prog.tasks if t.name == name)
        if spec.sync_start:
            assert len({r.placed_at for r in recs}) == 1
