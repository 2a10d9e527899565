"""Regions chosen by data: which accesses are indexed by values read at run time, and from
which tensors those values come.

A region (or a loop bound around it) that depends on a value read from a tensor -- a page
table, a slot mapping, a sequence length -- cannot be evaluated statically: the race rules
take it over the whole extent. When *both* sides of a conflict are chosen that way and no
exact pair of executions overlaps, nothing in the program shows the overlap; only the data
can make it happen. The lint then assumes the data keeps the accesses apart (the contract of
a paged cache: each request owns its pages, each ring slot holds one position) and says so
at note severity, naming the tensors the assumption rests on, as R506 does for the blocks of
one grid. Where the rows can coincide by design -- a decode step writing the slot its own
gather reads -- the note is the finding to act on: add the edge.
"""

from __future__ import annotations

from lowering import body as ir_body
from lowering.checks.bodies import of_template
from lowering.ir import Access, Task
from lowering.symbolic import DYNAMIC, free_symbols


def data_symbols(access: Access, loops: bool = False) -> set[str]:
    """The data-valued names (``let r = read(...)``) the access's region is indexed by, and with
    ``loops`` also those bounding the loops around it (a trip count read from a tensor)."""
    exprs = [e for r in access.region for e in (r.start, r.stop)]
    if loops:
        exprs += [e for loop in access.loops for e in (loop.start, loop.stop)]
    return {s.name for e in exprs for s in free_symbols(e) if s.kind == DYNAMIC}


def sources(task: Task) -> dict[str, set[str]]:
    """Local name -> the tensors its value is read from, through other locals."""
    return statement_sources(task.body)


def statement_sources(stmts) -> dict[str, set[str]]:
    """:func:`sources` of a sequence of statements."""
    direct: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    for s in ir_body.nested_stmts(stmts):
        if not isinstance(s, ir_body.LetS | ir_body.AssignS):
            continue
        tensors, names = direct.setdefault(s.name, set()), uses.setdefault(s.name, set())
        for v in ir_body.nested_values(s.value):
            if isinstance(v, ir_body.LoadV) and not v.local:
                tensors.add(v.tensor)
            elif isinstance(v, ir_body.LocalV) or (isinstance(v, ir_body.LoadV) and v.local):
                names.add(v.name if isinstance(v, ir_body.LocalV) else v.tensor)
            elif isinstance(v, ir_body.IntV):
                names.update(sym.name for sym in free_symbols(v.expr) if sym.kind == DYNAMIC)
    out: dict[str, set[str]] = {}

    def resolve(name: str, seen: frozenset[str]) -> set[str]:
        if name in out:
            return out[name]
        found = set(direct.get(name, ()))
        for other in uses.get(name, ()):
            if other not in seen:
                found |= resolve(other, seen | {other})
        out[name] = found
        return found

    for name in direct:
        resolve(name, frozenset({name}))
    return out


def origin(pairs: list[tuple[Task, Access]], memo: dict | None = None) -> str:
    """```page_table` and `slot_mapping``` -- the tensors the data-chosen regions of these
    accesses come from -- or "data read at run time" when no tensor is visible. ``memo``
    keeps each task's :func:`sources` (by task name) and each access's data names (by task
    name and access order) across calls of one check."""
    memo = {} if memo is None else memo
    tables: set[str] = set()
    for task, access in pairs:
        key = (task.name, access.order)  # one access meets many others
        names = memo.get(key)
        if names is None:
            names = memo[key] = data_symbols(access, loops=True)
        if names:
            found = memo.get(task.name)
            if found is None:
                found = memo[task.name] = _sources_via_template(task, memo)
            tables.update(t for n in names for t in found.get(n, ()))
    return " and ".join(f"`{t}`" for t in sorted(tables)) if tables else "data read at run time"


def _sources_via_template(task: Task, memo: dict) -> dict[str, set[str]]:
    """:func:`sources`, from the template of an instance's body when it has one (once for all
    its instances, the tensors renamed): the statements need not be made."""
    body = task.body
    template = getattr(body, "template", None)
    lets = ir_body.LetS | ir_body.AssignS
    if template is None or any(isinstance(s, lets) for s in ir_body.nested_stmts(body.extra)):
        return sources(task)
    known = of_template(memo.setdefault(("templates",), {}), template, statement_sources)  # not a task name
    # A capture the instance fills with a value read from data adds a use of that value's name,
    # which matters only where a local of the body has the same name.
    captured = {sym.name for e in body.mapping.values() for sym in free_symbols(e) if sym.kind == DYNAMIC}
    if captured & known.keys():
        return sources(task)
    renames = body.renames
    return {name: {renames.get(t, t) for t in tensors} for name, tensors in known.items()}


def assumed_text(pairs: list[tuple[Task, Access]], memo: dict | None = None) -> str:
    """What a finding adds when both sides are chosen by data and no exact pair overlaps."""
    return (
        f" (not shown: both regions are chosen by {origin(pairs, memo)} and taken over their whole extent; "
        f"the lint assumes the data keeps them apart, as a paged or ring cache does -- if the rows can "
        f"coincide, order the tasks)"
    )
