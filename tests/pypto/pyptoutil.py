"""Helpers for the PyPTO emitter and reader tests (unique basename: pytest prepend mode).

``canonical(graph)`` is what "isomorphic" means for the round trip: tasks (name, grid, core,
flags, predicate, explicit deps), edges with their reasons (kind, tensor, producer region,
anchor), signal ops (cell, peer, op, value, comparison, expected, loops, conditions),
barriers and atomic accesses. Names are compared after the emitter's renaming of the module
(``a.b`` -> ``a_b``, ``lowering.codegen.pypto.emit.emitted_names``): a source graph is renamed, a
graph read back from emitted code (``emitted=True``) already carries the emitted names. Symbolic values are compared
after normalisation (``nranks`` is the layer's rank count).
"""

from __future__ import annotations

from pathlib import Path

from lowering.codegen.names import ModuleNames
from lowering.codegen.pypto.emit import emitted_names, py_name
from lowering.ir import Graph, Task
from lowering.symbolic import NRANKS, Bin, Expr, Sym, simplify, substitute

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PYPTO_FIXTURES = FIXTURES / "pypto"


def _same(name: str) -> str:
    return name


def hint_name(name: str) -> str:
    """The ``name_hint`` the emitter gives a task base name with nothing to collide with: its
    readable form (the emitter names a module's hints together, ``ModuleNames``)."""
    return ModuleNames([name], lambda _: frozenset())(name)


def task_key(task: Task, hint=hint_name) -> str:
    name = task.name
    if task.index is not None and name.endswith(f"[{task.index}]"):
        return f"{hint(task.base)}[{task.index}]"
    return hint(name)


def _rename(e: Expr, rename=py_name) -> Expr:
    if isinstance(e, Sym):
        return Sym(rename(e.name), e.kind) if e.kind in ("param", "const", "scalar", "loop", "dynamic") else e
    if isinstance(e, Bin):
        return Bin(e.op, _rename(e.a, rename), _rename(e.b, rename))
    return e


def expr_key(graph: Graph, e: Expr | None, rename=py_name) -> str | None:
    if e is None:
        return None
    e = (
        substitute(e, {"nranks": graph.ranks})
        if any(isinstance(s, Sym) and s.kind == NRANKS for s in _syms(e))
        else e
    )
    return str(simplify(_rename(e, rename)))


def _syms(e: Expr):
    if isinstance(e, Sym):
        yield e
    elif isinstance(e, Bin):
        yield from _syms(e.a)
        yield from _syms(e.b)


def canonical(graph: Graph, emitted: bool = False) -> dict:
    module_names, hints, temps = (_same, _same, {}) if emitted else emitted_names(graph)
    py_name = _same if emitted else module_names
    names = {t.name: task_key(t, _same if emitted else hints) for t in graph.tasks}
    task_names: dict[str, str] = {}  # the front-end temporaries of the task being keyed

    def renamed(name: str) -> str:
        return name if emitted else task_names.get(name) or module_names(name)

    def expr_key(graph: Graph, e: Expr | None) -> str | None:
        return _expr_key(graph, e, renamed)

    def region(r) -> tuple:
        return tuple((expr_key(graph, x.start), expr_key(graph, x.stop), expr_key(graph, x.step)) for x in r)

    tasks = []
    for t in graph.tasks:
        p = t.predicate
        task_names.clear()
        task_names.update(temps.get(t.name, {}))
        tasks.append(
            (
                names[t.name],
                expr_key(graph, t.grid),
                t.blocks,
                t.core,
                t.early_resolve,
                t.sync_start,
                t.manual,
                None if p is None else (py_name(p.tensor), tuple(expr_key(graph, i) for i in p.index), p.cmp, expr_key(graph, p.value)),
                tuple(sorted(names[d.target] for d in t.after)),
                tuple(
                    (
                        s.kind, py_name(s.signal), tuple(expr_key(graph, i) for i in s.index), expr_key(graph, s.peer),
                        s.op if s.kind == "notify" else None, expr_key(graph, s.value), s.cmp if s.kind == "wait" else None,
                        expr_key(graph, s.expected),
                        tuple((lp.var, expr_key(graph, lp.start), expr_key(graph, lp.stop), expr_key(graph, lp.step)) for lp in s.loops),
                        tuple(expr_key(graph, c.expr) for c in s.conds if not str(c.expr).startswith("data@") and "data@" not in str(c.expr)),
                    )
                    for s in t.signals
                ),
                tuple((b.soft, len(b.loops)) for b in t.barriers),
                tuple(sorted((py_name(a.tensor), region(a.region)) for a in t.accesses if a.mode == "atomic")),
            )
        )  # fmt: skip

    def edges(es) -> list:
        return sorted(
            (names[e.src], names[e.dst], e.kind, py_name(e.tensor) if e.tensor else None, e.region, e.anchor)
            for e in es
        )

    return {
        "tasks": tasks,
        "edges": edges(graph.edges),
        "cross_round_edges": edges(graph.cross_round_edges),
        "ranks": graph.nranks,
    }


def discover_layers() -> list[Path]:
    """Every .dsl under tests/fixtures and models (each must compile: front-end error cases are
    inline sources in tests/dsl, not files)."""
    out = sorted(FIXTURES.rglob("*.dsl"))
    models = ROOT / "models"
    if models.is_dir():
        out += sorted(models.rglob("*.dsl"))
    return out


MANIFEST = Path("/work/shared/reference/pypto-api.json")


def load_manifest(path: Path = MANIFEST) -> dict[str, dict]:
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    return {e["name"]: e for e in data["entries"]}


def manifest_problems(source: str, manifest: dict[str, dict]) -> list[str]:
    """Every ``pl.*``/``pld.*`` name the source uses must be in the manifest, and every call
    must use only keyword names (and no more positional arguments than) the entry declares."""
    import ast

    def dotted(node) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in ("pl", "pld"):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None

    problems = []
    tree = ast.parse(source)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # check maximal chains only
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = dotted(node)
            if name is None or id(node) in inner:
                continue
            if name not in manifest:
                problems.append(f"line {node.lineno}: {name} is not in the manifest")
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            if name is None or name not in manifest:
                continue
            params = manifest[name].get("params", [])
            names = {p["name"] for p in params}
            var_kw = any(p["kind"] == "var_keyword" for p in params)
            var_pos = any(p["kind"] == "var_positional" for p in params)
            positional = [p for p in params if p["kind"] in ("positional_only", "positional_or_keyword")]
            for kw in node.keywords:
                if kw.arg is not None and kw.arg not in names and not var_kw:
                    problems.append(f"line {node.lineno}: {name}() has no parameter '{kw.arg}'")
            if not var_pos and len(node.args) > len(positional):
                problems.append(f"line {node.lineno}: {name}() takes {len(positional)} positional arguments")
            given = {kw.arg for kw in node.keywords}
            for p in params:
                if (
                    not p.get("required")
                    or p["kind"] in ("var_positional", "var_keyword")
                    or p["name"] in given
                ):
                    continue
                if p in positional and positional.index(p) < len(node.args):
                    continue
                problems.append(f"line {node.lineno}: {name}() misses the required '{p['name']}'")
    return problems


_expr_key = expr_key
