"""The shared structures that keep the lint near-linear give the answers of the naive ones:
reachability (compressed ancestor sets), the compiled evaluator and the box index."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from lowering.checks.fasteval import compiled, compiled_bounds
from lowering.checks.handshake.need import need
from lowering.checks.index import BoxIndex
from lowering.checks.reach import Ancestors, Reach
from lowering.symbolic import LOOP, Bin, Const, EvalError, Sym, bounds, evaluate


def _graph(n: int, edges: list[tuple[int, int]]):
    tasks = [SimpleNamespace(name=f"t{i}") for i in range(n)]
    return SimpleNamespace(tasks=tasks, edges=[SimpleNamespace(src=f"t{a}", dst=f"t{b}") for a, b in edges])


def _naive(n: int, edges: list[tuple[int, int]]) -> list[set[int]]:
    preds: list[set[int]] = [set() for _ in range(n)]
    for a, b in edges:
        preds[b].add(a)
    anc: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for p in preds[i]:
            anc[i] |= anc[p] | {p}
    return anc


def _shapes(rng: random.Random):
    n = 300
    yield n, [(i - 1, i) for i in range(1, n)]  # a chain
    yield n, [(i - 2, i) for i in range(2, n)]  # two interleaved chains
    yield n, [(i, n - 1) for i in range(n - 1)]  # independent tasks, one join
    yield n, [(i - 1, i) for i in range(2, n - 1)] + [(0, n - 1), (n - 2, n - 1)]  # seed read at the end
    for _ in range(60):
        n = rng.randint(1, 80)
        density = rng.random() * 0.3
        yield n, [(a, b) for b in range(n) for a in range(b) if rng.random() < density]


def test_reach_matches_the_transitive_closure():
    rng = random.Random(7)
    for n, edges in _shapes(rng):
        r = Reach(_graph(n, edges))
        anc = _naive(n, edges)
        for b in range(n):
            assert {int(x[1:]) for x in r.ancestors(f"t{b}")} == anc[b]
            assert r.ancestor_count(f"t{b}") == len(anc[b])
            assert [int(x[1:]) for x in r.descendants_of(f"t{b}")] == [x for x in range(n) if b in anc[x]]
            for a in range(n):
                assert r.before(f"t{a}", f"t{b}") == (a in anc[b])
                assert r.ordered(f"t{a}", f"t{b}") == (a in anc[b] or b in anc[a])


def test_ancestor_sets_behave_like_frozensets():
    edges = [(0, 1), (1, 2), (0, 3)]
    ancestors = Ancestors(Reach(_graph(4, edges)))
    assert set(ancestors) == {"t0", "t1", "t2", "t3"}
    assert "t0" in ancestors["t2"] and "t3" not in ancestors["t2"] and 5 not in ancestors["t2"]
    assert len(ancestors["t2"]) == 2
    assert sorted(ancestors["t2"]) == ["t0", "t1"]
    assert {"t2"} | ancestors["t2"] == {"t0", "t1", "t2"}
    assert ancestors["t2"] == frozenset({"t0", "t1"})
    with pytest.raises(KeyError):
        ancestors["nope"]


def _expr(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.5:
            return Const(rng.randint(-6, 6))
        return Sym(rng.choice("abcz"), LOOP)  # z is never bound
    op = rng.choice(
        ["+", "-", "*", "//", "%", "cdiv", "min", "max", "==", "!=", "<", "<=", ">", ">=", "and", "or"]
    )
    return Bin(op, _expr(rng, depth - 1), _expr(rng, depth - 1))


def _outcome(f, *args):
    try:
        return f(*args)
    except EvalError as err:
        return ("EvalError", str(err))


def test_compiled_expressions_evaluate_like_evaluate():
    rng = random.Random(3)
    for _ in range(3000):
        e = _expr(rng, 4)
        env = {"a": rng.randint(-5, 5), "b": rng.randint(-5, 5), "c": rng.randint(0, 3)}
        assert _outcome(compiled(e), env) == _outcome(evaluate, e, env), e


def test_compiled_bounds_bound_like_bounds():
    """Points and intervals, unbound symbols, divisors that may be zero: the same interval or
    the same EvalError as ``bounds`` (access instances bound their regions with it)."""
    rng = random.Random(5)
    for _ in range(3000):
        e = _expr(rng, 4)
        env = {}
        for name in "abc":
            lo = rng.randint(-5, 5)
            env[name] = lo if rng.random() < 0.5 else (lo, lo + rng.randint(0, 4))
        assert _outcome(compiled_bounds(e), env) == _outcome(bounds, e, env), e
    with pytest.raises(EvalError, match="^'it's' is not known here$"):
        compiled_bounds(Sym("it's", LOOP))({})


def _bound_expr(rng: random.Random, depth: int):
    """As ``_expr``, with every symbol bound."""
    if depth == 0 or rng.random() < 0.25:
        return Const(rng.randint(-6, 6)) if rng.random() < 0.4 else Sym(rng.choice("abc"), LOOP)
    op = rng.choice(["+", "-", "*", "//", "%", "cdiv", "min", "max", "<", "==", "and", "or"])
    return Bin(op, _bound_expr(rng, depth - 1), _bound_expr(rng, depth - 1))


def test_bounds_contain_every_value_and_are_exact_on_points():
    """``symbolic.bounds``, the reference the compiled and vectorised bounds follow: every value
    inside the intervals lies in (lo, hi); a point environment gives lo == hi == the value."""
    import itertools

    rng = random.Random(11)
    for _ in range(4000):
        e = _bound_expr(rng, 3)
        env, choices = {}, {}
        for name in "abc":
            lo = rng.randint(-5, 5)
            hi = lo + (rng.randint(0, 3) if rng.random() < 0.6 else 0)
            env[name] = lo if lo == hi and rng.random() < 0.5 else (lo, hi)
            choices[name] = range(lo, hi + 1)
        outcome = _outcome(bounds, e, env)
        if isinstance(outcome, tuple) and outcome[0] == "EvalError":
            continue
        lo, hi = outcome
        values = [
            v
            for combo in itertools.product(*(choices[n] for n in "abc"))
            if not isinstance(v := _outcome(evaluate, e, dict(zip("abc", combo, strict=True))), tuple)
        ]
        assert all(lo <= v <= hi for v in values), (e, env)
        if all(len(choices[n]) == 1 for n in "abc") and values:
            assert lo == hi == values[0], (e, env)


def test_vectorised_bounds_contain_every_value_and_are_exact_on_exact_requests():
    """``extents.vbounds`` per request (arrays next to scalars, exact values next to intervals):
    every value the expression takes inside the intervals lies in its (lo, hi), and a request
    whose every symbol is exact gets lo == hi == the value (its shortcuts for exact operands)."""
    import itertools

    import numpy as np

    from lowering.checks.extents import vbounds

    rng = random.Random(7)
    requests = 4
    for _ in range(4000):
        e = _bound_expr(rng, 3)
        env, choices = {}, {}
        for name in "abc":
            kind = rng.choice(["int", "array", "interval", "array interval"])
            if kind == "int":
                v = rng.randint(-5, 5)
                env[name], choices[name] = v, [[v]] * requests
            elif kind == "array":
                v = np.array([rng.randint(-5, 5) for _ in range(requests)], dtype=np.int64)
                env[name], choices[name] = v, [[int(x)] for x in v]
            else:
                lo = [rng.randint(-5, 5) for _ in range(requests)]
                hi = [x + rng.randint(0, 3) for x in lo]
                env[name] = (lo[0], hi[0]) if kind == "interval" else (np.array(lo), np.array(hi))
                ends = [(lo[0], hi[0])] * requests if kind == "interval" else list(zip(lo, hi, strict=True))
                choices[name] = [list(range(a, b + 1)) for a, b in ends]
        try:
            lo, hi = (np.broadcast_to(x, (requests,)) for x in vbounds(e, env))
        except EvalError:
            continue
        for i in range(requests):
            values = []
            for combo in itertools.product(*(choices[n][i] for n in "abc")):
                outcome = _outcome(evaluate, e, dict(zip("abc", combo, strict=True)))
                if not isinstance(outcome, tuple):
                    values.append(outcome)
            assert all(lo[i] <= v <= hi[i] for v in values), (e, env, i)
            if all(len(choices[n][i]) == 1 for n in "abc") and values:
                assert lo[i] == hi[i] == values[0], (e, env, i)


def test_box_index_finds_exactly_the_boxes_that_meet():
    rng = random.Random(11)
    for _ in range(50):
        boxes = []
        for _ in range(rng.randint(0, 60)):
            r0 = rng.randint(0, 200)
            c0 = rng.randint(0, 20)
            boxes.append(((r0, r0 + rng.choice([1, 2, 3, 8, 40, 200]), 1), (c0, c0 + rng.randint(1, 8), 1)))
        index = BoxIndex(boxes)
        for _ in range(20):
            r0, c0 = rng.randint(0, 220), rng.randint(0, 25)
            q = ((r0, r0 + rng.randint(1, 50), 1), (c0, c0 + rng.randint(1, 6), 1))
            want = [
                i
                for i, b in enumerate(boxes)
                if all(min(x[1], y[1]) > max(x[0], y[0]) for x, y in zip(q, b, strict=True))
            ]
            assert index.query(q) == want


def test_need_is_the_closure_over_notifiers_ancestors_and_their_waits():
    """Need(W) (D109, D104): the notifiers W's waits need, their ancestors, and the same for every
    waiting task among those; the walk skips what it already holds, and must not lose any."""
    rng = random.Random(13)
    for _ in range(200):
        n = rng.randint(1, 40)
        edges = [(a, b) for b in range(n) for a in range(b) if rng.random() < 0.08]
        g = _graph(n, edges)
        waiting = {i for i in range(n) if rng.random() < 0.3}
        for i, t in enumerate(g.tasks):
            t.waits = (object(),) if i in waiting else ()
        by_name = {t.name: t for t in g.tasks}
        g.task = by_name.__getitem__
        feeds = {i: {rng.randrange(n) for _ in range(rng.randint(0, 3))} for i in range(n)}
        g.file = "layer.dsl"  # a DSL layer: no signal-implied order, the graph's own edges
        ctx = SimpleNamespace(
            cache={("notifiers_needed", f"t{i}"): {f"t{j}" for j in feeds[i]} for i in range(n)},
            reach=Reach(g),
        )
        anc = _naive(n, edges)
        for w in waiting:
            want: set[int] = set()
            todo, seen = [w], set()
            while todo:
                x = todo.pop()
                if x in seen:
                    continue
                seen.add(x)
                for j in feeds[x]:
                    for t in {j} | anc[j]:
                        want.add(t)
                        if t in waiting:
                            todo.append(t)
            assert need(g, ctx, g.task(f"t{w}")) == {f"t{t}" for t in want}


def _rule_fixture_graphs(codes: tuple[str, ...] | None = None):
    """(path, graph) of every rule fixture (of ``codes`` only, if given). Every rule fixture
    compiles (lint findings are not compile errors): one that does not fails the test."""
    from dsl.frontend import compile_file

    rules = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
    paths = rules.glob("*/*.dsl") if codes is None else (p for c in codes for p in (rules / c).glob("*.dsl"))
    paths = sorted(paths)
    assert paths, "no rule fixtures found"
    for path in paths:
        for g in compile_file(path):
            yield path, g


def test_access_instances_look_up_only_the_names_their_expressions_mention(monkeypatch):
    """``hits`` copies only the names an access's expressions mention into the environment of
    each instance: on every fixture the instances are those of the whole environment."""
    from lowering.checks import access_instances

    class Everything(set):
        def __contains__(self, item: object) -> bool:
            return True

    codes = ("R501", "R502", "R505", "R506", "N201", "N202", "D101", "D110")
    compared = 0
    for path, g in _rule_fixture_graphs(codes):
        for task in g.tasks:
            for a in task.accesses:
                g.__dict__.pop("_access_hits", None)
                fast = access_instances.hits(g, task, a)
                with monkeypatch.context() as m:
                    m.setattr(access_instances, "_looked_up", lambda access: Everything())
                    g.__dict__.pop("_access_hits", None)
                    assert access_instances.hits(g, task, a) == fast, (path.name, task.name, a.span)
                compared += len(fast)
    assert compared > 100


def test_an_access_that_cannot_be_certain_has_no_exact_unconditional_execution():
    """``can_be_certain`` lets R505 skip enumerating accesses that read data: on every rule
    fixture, an access it rules out has no execution that is exact and not ``maybe``."""
    from lowering.checks import access_instances

    counts = {True: 0, False: 0}
    for path, g in _rule_fixture_graphs():
        for task in g.tasks:
            for a in task.accesses:
                certain = access_instances.can_be_certain(g, a)
                counts[certain] += 1
                if not certain:
                    found = access_instances.hits(g, task, a)
                    assert not [h for h in found if h.exact and not h.maybe], (
                        path.name,
                        task.name,
                        a.span,
                    )
    assert counts[True] > 100 and counts[False] > 5, counts
