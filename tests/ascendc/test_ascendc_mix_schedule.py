"""The MIX kernel's cross-core protocol, run: for random mix bodies, the AIC and AIV programs
``split_mix`` makes are executed under random interleavings (flags as counters, barriers as
rendezvous), tracking which definition every local copy, workspace slot and GM tensor holds;
every statement must read exactly the definitions it reads in program order, the tensors
must end as in program order, and no interleaving may deadlock or leave a flag set.

The programs are not the C++ (the writers are checked by golden text and the type check);
they are the statement sequences the writers turn into it, so this checks the placement of
every ``CrossCoreSetFlag``/``CrossCoreWaitFlag`` pair and ``SyncAll``.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from dsl.frontend import compile_text
from lowering import body as ir_body
from lowering.codegen.ascendc.mix import FLAG_TO_AIC, FLAG_TO_AIV, CrossFlagS, split_mix
from lowering.symbolic import evaluate

TENSORS = ("t0", "t1", "t2")
CUBE_LINES = (
    "p = matmul({a}[:, :], w[:, :], b_trans)",
    "p = matmul(v, w[:, :], b_trans)",
    "{b}[:, :] = p",
    "{b}[:, :] = matmul({a}[:, :], w[:, :], b_trans)",
)
VECTOR_LINES = (
    "{b}[:, :] = exp({a}[:, :])",
    "{b}[:, :] = exp(p)",
    "v = exp({a}[:, :])",
    "v = v * 0.5 + p",
)

statement = st.tuples(
    st.sampled_from(CUBE_LINES + VECTOR_LINES), st.sampled_from(TENSORS), st.sampled_from(TENSORS)
)
inner = st.one_of(
    statement.map(lambda s: ("stmt", s)),
    st.lists(statement, min_size=1, max_size=3).map(lambda b: ("if", b)),  # if i == 0 { ... }
)
item = st.one_of(
    statement.map(lambda s: ("stmt", s)),
    st.lists(inner, min_size=1, max_size=4).map(lambda b: ("loop", b)),
    st.just(("barrier", None)),
)


def _source(items) -> str:
    lines = ["    let p = matmul(t0[:, :], w[:, :], b_trans)", "    let v = exp(t1[:, :])"]
    for kind, what in items:
        if kind == "stmt":
            lines.append("    " + what[0].format(a=what[1], b=what[2]))
        elif kind == "loop":
            lines.append("    for i in range(2) {")
            for inner_kind, x in what:
                if inner_kind == "stmt":
                    lines.append("      " + x[0].format(a=x[1], b=x[2]))
                else:
                    lines.append("      if i == 0 {")
                    lines.extend("        " + s.format(a=a, b=b) for s, a, b in x)
                    lines.append("      }")
            lines.append("    }")
        else:
            lines.append("    barrier")
    decls = "\n".join(f"  scratch {t}: f32[16, 16]" for t in TENSORS)
    body = "\n".join(lines)
    return f"layer g(R = 16) {{\n  input w: f32[16, 16]\n{decls}\n  task k on mix {{\n{body}\n  }}\n}}\n"


LOCALS = {"p", "v"}


def _reads_writes(s: ir_body.Stmt) -> tuple[list[str], list[str]]:
    """(locals and GM tensors ``s`` reads, what it writes), workspace slots included."""
    reads = sorted(ir_body.read_names((s,)) & LOCALS)
    reads += sorted(
        {v.tensor for v in ir_body.nested_values(s.value) if isinstance(v, ir_body.LoadV) and not v.local}
    )
    return reads, [s.tensor if isinstance(s, ir_body.StoreS) else s.name]


def _flatten(stmts, env, ctx=()) -> list[tuple]:
    """Dynamic events: ("stmt", key, statement, is a slot hand-off) with key = (line, iteration
    indices), ("set" | "wait", flag), ("barrier",)."""
    out: list[tuple] = []
    for s in stmts:
        if isinstance(s, ir_body.ForS):
            for i in range(evaluate(s.start, env), evaluate(s.stop, env)):
                out.extend(_flatten(s.body, {**env, s.var: i}, (*ctx, i)))
        elif isinstance(s, ir_body.IfS):
            out.extend(_flatten(s.then if evaluate(s.cond.expr, env) else s.orelse, env, ctx))
        elif isinstance(s, CrossFlagS):
            out.append((s.op, s.flag))
        elif isinstance(s, ir_body.BarrierS):
            out.append(("barrier",))
        else:
            out.append(("stmt", (s.span.line, ctx), s, _is_handoff(s)))
    return out


def _is_handoff(s: ir_body.Stmt) -> bool:
    """A workspace slot store or load the split inserted (not a statement of the source)."""
    if isinstance(s, ir_body.StoreS):
        return s.tensor.startswith("$")
    return (
        isinstance(s, ir_body.LetS) and isinstance(s.value, ir_body.LoadV) and s.value.tensor.startswith("$")
    )


def _run(
    programs: dict[str, list[tuple]], slot_local: dict[str, str], rng: random.Random
) -> tuple[dict, dict]:
    """Execute both programs, one event at a time, the next core chosen at random among those
    that can move, tracking which definition every local, slot and tensor holds. Returns what
    each statement read (key -> sorted (name, defining key)) and the final tensors."""
    pc = {c: 0 for c in programs}
    counters = {FLAG_TO_AIV: 0, FLAG_TO_AIC: 0}
    local = {c: {} for c in programs}  # the core's own copy of each local
    slots: dict[str, object] = {}
    gm: dict[str, object] = {}
    seen: dict[tuple, list] = {}
    while any(pc[c] < len(programs[c]) for c in programs):
        movable = []
        for c, prog in programs.items():
            if pc[c] >= len(prog):
                continue
            ev, other = prog[pc[c]], "aiv" if c == "aic" else "aic"
            if ev[0] == "wait" and counters[ev[1]] == 0:
                continue
            if ev[0] == "barrier" and not (
                pc[other] < len(programs[other]) and programs[other][pc[other]][0] == "barrier"
            ):
                continue
            movable.append(c)
        assert movable, f"deadlock at {pc}"
        c = rng.choice(movable)
        ev = programs[c][pc[c]]
        if ev[0] == "set":
            counters[ev[1]] += 1
        elif ev[0] == "wait":
            counters[ev[1]] -= 1
        elif ev[0] == "barrier":
            pc["aiv" if c == "aic" else "aic"] += 1  # both cores pass the rendezvous together
        elif ev[3]:  # a slot store or load
            stmt = ev[2]
            if isinstance(stmt, ir_body.StoreS):
                slots[stmt.tensor] = local[c].get(stmt.value.name)
            else:
                local[c][stmt.name] = slots.get(stmt.value.tensor)
        else:
            reads, writes = _reads_writes(ev[2])
            got = seen.setdefault(ev[1], [])
            for name in reads:
                if name.startswith("$"):
                    got.append((slot_local[name], slots.get(name)))
                elif name in LOCALS:
                    got.append((name, local[c].get(name)))
                else:
                    got.append((name, gm.get(name)))
            for name in writes:
                (local[c] if name in LOCALS else gm)[name] = ev[1]
        pc[c] += 1
    assert counters == {FLAG_TO_AIV: 0, FLAG_TO_AIC: 0}, f"flags left set: {counters}"
    return {k: sorted(v, key=str) for k, v in seen.items()}, gm


def _sequential(events: list[tuple]) -> tuple[dict, dict]:
    """What each statement reads in program order, and the final tensors."""
    current: dict[str, object] = {}
    seen = {}
    for ev in events:
        reads, writes = _reads_writes(ev[2])
        seen[ev[1]] = sorted(((n, current.get(n)) for n in reads), key=str)
        for name in writes:
            current[name] = ev[1]
    return seen, {n: k for n, k in current.items() if n not in LOCALS}


@settings(max_examples=60, deadline=None)
@given(st.lists(item, min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_every_read_sees_what_it_sees_in_program_order_under_any_interleaving(items, seed):
    (graph,) = compile_text(_source(items), "g.dsl")
    task = graph.tasks[0]
    env = graph.env()
    plan = split_mix(graph, task, env)
    programs = {"aic": _flatten(plan.aic, env), "aiv": _flatten(plan.aiv, env)}
    slot_local = {
        ev[2].tensor: ev[2].value.name
        for prog in programs.values()
        for ev in prog
        if ev[0] == "stmt" and ev[3] and isinstance(ev[2], ir_body.StoreS)
    }
    expected = _sequential([ev for ev in _flatten(task.body, env) if ev[0] == "stmt"])
    rng = random.Random(seed)
    for _ in range(6):
        assert _run(programs, slot_local, rng) == expected, _source(items)


def test_the_schedule_check_fails_without_the_flags():
    """The property bites: drop every flag from a plan and some interleaving reads a stale value."""
    src = _source([("stmt", ("{b}[:, :] = matmul({a}[:, :], w[:, :], b_trans)", "t0", "t1")),
                   ("stmt", ("{b}[:, :] = exp({a}[:, :])", "t1", "t2"))])  # fmt: skip
    (graph,) = compile_text(src, "g.dsl")
    env = graph.env()
    plan = split_mix(graph, graph.tasks[0], env)
    assert any(isinstance(s, CrossFlagS) for s in plan.aiv)
    expected = _sequential([ev for ev in _flatten(graph.tasks[0].body, env) if ev[0] == "stmt"])
    with_flags = {"aic": _flatten(plan.aic, env), "aiv": _flatten(plan.aiv, env)}
    without = {c: [ev for ev in prog if ev[0] not in ("set", "wait")] for c, prog in with_flags.items()}
    slot_local = {"$k.ws0": "p", "$k.ws1": "v"}
    assert all(_run(with_flags, slot_local, random.Random(seed)) == expected for seed in range(20))
    assert any(_run(without, slot_local, random.Random(seed)) != expected for seed in range(20))
