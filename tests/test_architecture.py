"""The pipeline's shape, read from the sources with ``ast`` (nothing is imported):
``dsl`` -> ``lowering`` -> ``runtime``, never back up, and no import cycle.

Every import counts -- module level and inside functions (a deferred import only hides a cycle
until the function runs) -- except those under ``if TYPE_CHECKING:``, which never run.  An
import of a submodule also runs the ``__init__`` of each package above it, so that is an edge
too (except to the importer's own packages, which are already initialising).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dsl", "lowering", "runtime")
#: What each package may import from the project (itself included).
ALLOWED = {"dsl": {"dsl", "lowering", "runtime"}, "lowering": {"lowering", "runtime"}, "runtime": {"runtime"}}


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(tree: ast.Module, modules: dict[str, Path]) -> set[str]:
    """The project modules ``tree`` imports, by their dotted names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    names.add(sub)
                elif node.module in modules:
                    names.add(node.module)
    return names


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules importing it runs (see the module docstring)."""
    modules = _modules(root)
    graph = {}
    for name, path in modules.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        edges = set()
        for target in _imported(ast.parse(path.read_text(encoding="utf-8")), modules):
            parts = target.split(".")
            edges.add(target)
            edges.update(
                p
                for p in (".".join(parts[:i]) for i in range(1, len(parts)))
                if p in modules and p not in own
            )
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def backward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs that go back up the pipeline."""
    return sorted(
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if target.split(".")[0] not in ALLOWED[name.split(".")[0]]
    )


def test_no_package_imports_back_up_the_pipeline(graph):
    assert backward_imports(graph) == []


def test_no_import_cycle_including_deferred_imports_and_package_inits(graph):
    assert cycles(graph) == []


def driver_only_front_end_modules(graph: dict[str, set[str]]) -> list[str]:
    """Modules of the front end (``dsl`` outside ``dsl.driver``) that only the driver imports:
    they belong to the driver."""
    importers: dict[str, set[str]] = {}
    for name, targets in graph.items():
        for target in targets:
            importers.setdefault(target, set()).add(name)
    return sorted(
        name
        for name in graph
        if name.startswith("dsl.")
        and not name.startswith("dsl.driver")
        and name != "dsl.frontend"  # the front end's entry point, which the driver calls
        and importers.get(name)
        and all(i.startswith("dsl.driver") or i.startswith("tests") for i in importers[name])
    )


def test_the_front_end_holds_no_module_only_the_driver_uses(graph):
    assert driver_only_front_end_modules(graph) == []


def test_the_driver_check_sees_a_front_end_module_only_the_driver_imports():
    graph = {"dsl.parser": set(), "dsl.render": set(), "dsl.driver.cli": {"dsl.render", "dsl.parser"}}
    graph["dsl.frontend"] = {"dsl.parser"}
    assert driver_only_front_end_modules(graph) == ["dsl.render"]


def test_the_checker_sees_a_deferred_cycle_and_an_edge_through_a_package_init(tmp_path):
    """The two tests above fail on what they guard (written here, not by breaking the tree)."""
    for package, text in {
        "runtime/__init__.py": "from runtime.b import f\n",
        "runtime/a.py": "def g():\n    from runtime.b import f\n",
        "runtime/b.py": "from runtime import a\n",
        "runtime/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from runtime.b import f\n",
        "lowering/__init__.py": "",
        "lowering/x.py": "def h():\n    import runtime.c\n",
        "runtime/d.py": "from lowering.x import h\n",
        "dsl/__init__.py": "",
    }.items():
        (tmp_path / package).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / package).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["runtime.c"] == set()  # TYPE_CHECKING imports never run
    assert graph["lowering.x"] == {"runtime", "runtime.c"}  # runtime/__init__ runs first
    assert cycles(graph) == [["runtime.a", "runtime.b"]]
    assert backward_imports(graph) == [("runtime.d", "lowering"), ("runtime.d", "lowering.x")]


def test_the_checker_sees_a_cycle_that_closes_through_a_package_init(tmp_path):
    """A package whose ``__init__`` imports its submodules, one of which needs a module that
    imports a sibling submodule: importing the sibling runs the package ``__init__`` first, so
    the cycle is real although no module names the package (the shape of issue 15's cycle
    through ``pypto_reader/__init__``); and one that imports a name from its own package."""
    for package, text in {
        "lowering/__init__.py": "",
        "lowering/reader/__init__.py": "from lowering.reader.ops import OPS\n",
        "lowering/reader/ops.py": "from lowering.table import T\nOPS = T\n",
        "lowering/table.py": "from lowering.reader.kinds import K\nT = K\n",
        "lowering/reader/kinds.py": "K = 1\n",
        "runtime/__init__.py": "",
        "runtime/pkg/__init__.py": "from runtime.pkg.a import f\nhelper = 1\n",
        "runtime/pkg/a.py": "from runtime.pkg import helper\ndef f():\n    return helper\n",
        "dsl/__init__.py": "",
    }.items():
        (tmp_path / package).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / package).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["lowering.table"] == {"lowering.reader", "lowering.reader.kinds"}
    assert cycles(graph) == [
        ["lowering.reader", "lowering.reader.ops", "lowering.table"],
        ["runtime.pkg", "runtime.pkg.a"],
    ]


#: The project's top-level packages: a base class imported from one of them is the project's.
PROJECT_PACKAGES = (*PACKAGES, "codegen_templates")
#: Where classes must be composed of pieces rather than mixed from several project bases.
COMPOSED_PACKAGES = [ROOT / p for p in PROJECT_PACKAGES if (ROOT / p).is_dir()]


def _project_names(tree: ast.Module) -> set[str]:
    """The names in ``tree`` that stand for the project's classes or modules: its own
    top-level classes and what it imports from the project (relative imports included)."""
    names = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] in PROJECT_PACKAGES:
                names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PROJECT_PACKAGES:
                    names.add(a.asname or a.name.split(".")[0])
    return names


def _root_name(base: ast.expr) -> str | None:
    """``A`` of a base written ``A``, ``A.B.C`` or ``A[T]``."""
    while isinstance(base, ast.Subscript | ast.Attribute):
        base = base.value
    return base.id if isinstance(base, ast.Name) else None


def mixed_classes(*packages: Path) -> list[str]:
    """``module.Class`` for each class under ``packages`` with more than one base of the
    project's own (``Exception`` or ``Enum`` beside one does not count): a class split across
    files by mixins rather than composed of pieces that each own one job (issue 15)."""
    out = []
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            project = _project_names(tree)
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef):
                    continue
                own = [b for b in node.bases if _root_name(b) in project]
                if len(own) > 1:
                    out.append(f"{path.relative_to(package.parent).with_suffix('').as_posix()}.{node.name}")
    return out


def test_no_class_is_mixed_from_several_project_bases():
    assert mixed_classes(*COMPOSED_PACKAGES) == []


def test_the_mixin_check_sees_a_class_of_two_bases(tmp_path):
    (tmp_path / "reader.py").write_text("class A: pass\nclass B: pass\nclass R(A, B): pass\n")
    assert mixed_classes(tmp_path) == [f"{tmp_path.name}/reader.R"]


def test_the_mixin_check_sees_bases_imported_from_other_project_modules(tmp_path):
    (tmp_path / "writer.py").write_text(
        "from lowering.masks import MaskOps\n"
        "import lowering.comm as comm\n"
        "from .base import Base\n"
        "class W(comm.CommMixin, MaskOps, Base): pass\n"
        "class Error(Base, ValueError): pass\n"
        "class Plain(dict, metaclass=type): pass\n"
    )
    assert mixed_classes(tmp_path) == [f"{tmp_path.name}/writer.W"]


def _attributes_provided(node: ast.ClassDef) -> set[str]:
    """What ``self.<name>`` can find on an instance of ``node`` by its own code: its methods,
    class attributes and annotated fields, and every ``self.<name>`` one of its methods assigns."""
    names: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and _is_self(sub.value):
            names.add(sub.attr)
    return names


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def classes_that_lean_on_subclasses(*packages: Path) -> list[str]:
    """``module.Class`` for each class under ``packages`` that reads ``self.<name>`` which
    neither it nor its project bases provide, when nothing outside the project could either
    (every base is the project's): a mixin that only works inside a class defined elsewhere,
    however many bases that class has (issue 15: a class split across files, not composed)."""
    defined: dict[str, list[ast.ClassDef]] = {}
    where: dict[int, str] = {}
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            module = path.relative_to(package.parent).with_suffix("").as_posix()
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef):
                    defined.setdefault(node.name, []).append(node)
                    where[id(node)] = f"{module}.{node.name}"

    def provided(node: ast.ClassDef, seen: frozenset[str]) -> set[str] | None:
        """What ``node`` and its bases provide; None when a base is not the project's."""
        names = _attributes_provided(node)
        for base in node.bases:
            name = base.attr if isinstance(base, ast.Attribute) else _root_name(base)
            if name not in defined or name in seen:
                return None
            for base_node in defined[name]:
                inherited = provided(base_node, seen | {name})
                if inherited is None:
                    return None
                names |= inherited
        return names

    out = []
    for nodes in defined.values():
        for node in nodes:
            names = provided(node, frozenset({node.name}))
            if names is None or node.keywords:  # a metaclass may provide attributes too
                continue
            read = {
                sub.attr
                for sub in ast.walk(node)
                if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load) and _is_self(sub.value)
            }
            if {a for a in read - names if not a.startswith("__")}:
                out.append(where[id(node)])
    return sorted(out)


def test_no_class_leans_on_attributes_a_subclass_provides():
    assert classes_that_lean_on_subclasses(*COMPOSED_PACKAGES) == []


def test_the_lean_check_sees_a_single_base_mixin_from_another_module(tmp_path):
    """The shape of the PyPTO ``HostParts`` and ``ValueWriter`` mixins: one base, no
    ``__init__``, methods that read what only the class built on it sets."""
    package = tmp_path / "lowering"
    package.mkdir()
    (package / "parts.py").write_text(
        "class Parts:\n    def text(self):\n        return self.names[0]\n"
        "class Table:\n    rows: list\n    def first(self):\n        return self.rows[0]\n"
        "class Base:\n    def __init__(self):\n        self.names = []\n"
        "class Derived(Base):\n    def text(self):\n        return self.names\n"
        "class Out(ValueError):\n    def text(self):\n        return self.args\n"
    )
    (package / "writer.py").write_text(
        "from lowering.parts import Parts\nclass Writer(Parts):\n    def __init__(self):\n        self.names = []\n"
    )
    assert classes_that_lean_on_subclasses(package) == ["lowering/parts.Parts"]
