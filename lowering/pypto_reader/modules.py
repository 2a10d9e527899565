"""Loading a PyPTO file and the modules of the model tree it imports, and running their top level.

Nothing is imported or executed: each file is parsed with ``ast`` and its top level is
interpreted in order by :class:`ModuleInterpreter` (``lowering.pypto_reader.interp``), so a
sibling module sees the attributes another module reassigned before importing it, exactly
as at import time (``config.FLASH = dataclasses.replace(config.FLASH, ...)`` then ``from
config import FLASH``). Imports resolve, like Python with the script's folder first on
``sys.path``, against the importing file's folder, then (for the harness and helper
packages kept at a repository root) up to ``MAX_ANCESTORS`` folders above it, then the
folders the file adds to ``sys.path``; relative imports against the package. ``pypto.language``
and ``pypto.language.distributed`` bind the ``pl``/``pld`` namespaces under any alias; any
other module is opaque (``ExternVal``).

Integer module constants become parameters (``constants.Params``); module-level ``assert``s
their admissible sets or layer assertions; ``pl.dynamic`` names dynamic axes, ranged later
from the bindings. The ``if __name__ == "__main__":`` harness is not run with the module:
``run_main`` runs it afterwards, with every argv option at its default, to learn which
requests the file builds its tensors for.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from lowering import parameters
from lowering.pypto_reader import interp_control_flow, read_context, std_modules
from lowering.pypto_reader.constants import (
    ArgOption,
    Params,
    argv_options,
    domain_of_assert,
    is_main_guard,
    main_rebindings,
    range_domain,
)
from lowering.pypto_reader.exprs import dotted
from lowering.pypto_reader.interp import PyInterpreter
from lowering.pypto_reader.interp_control import HOST_LOOP_STEPS, Budget, BudgetExceeded
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.py_exceptions import PyRaise, exception_name
from lowering.pypto_reader.values import (
    IntVal,
    ModuleVal,
    PlRef,
    SeqVal,
    Unknown,
    Val,
)
from lowering.symbolic import Sym

MAX_MODULE_BYTES = 16 * 1024 * 1024
MAX_ANCESTORS = 2
PL_MODULES = {"pypto.language": "pl", "pypto.language.distributed": "pld"}


@dataclass(eq=False)
class ModuleInfo:
    name: str
    path: Path
    text: str
    tree: ast.Module
    prefix: str  # prefix of its constants' symbol names ("" for the main file and config)
    globals: dict[str, Val] = field(default_factory=dict)
    argv: dict[str, ArgOption] = field(default_factory=dict)
    is_pypto: bool = False
    is_main: bool = False
    main_blocks: list[ast.If] = field(default_factory=list)

    @property
    def file(self) -> str:
        return str(self.path)


class ModuleInterpreter(PyInterpreter):
    """Interprets module top levels and the host code they call; binds the parameters."""

    loop_limit = HOST_LOOP_STEPS

    def __init__(self, module: ModuleInfo, loader: Loader):
        super().__init__(module, loader.notes, loader.params.env, loader, loader.budget)
        self.params = loader.params
        self.defining = True  # module-level integers become parameters (not while running main)

    def module_name(self, module: ModuleInfo) -> str:
        return "__main__" if module.is_main else module.name

    def bind_global(self, module: ModuleInfo, name: str, value: Val, node: ast.AST) -> None:
        module.globals[name] = self.parameter(module, name, value, node)

    def on_store_attribute(self, module: ModuleVal, name: str, value: Val, node: ast.AST) -> Val:
        return self.parameter(module.module, name, value, node)

    def parameter(self, module: ModuleInfo, name: str, value: Val, node: ast.AST) -> Val:
        if not self.defining or not isinstance(value, IntVal):
            return value
        full = module.prefix + name
        if value.expr == Sym(full, "param"):
            return value
        return IntVal(self.params.define(full, value.expr, span_of(self.file, node)))

    def dynamic_axis(self, name: str, node: ast.AST) -> Val:
        return IntVal(self.params.dynamic(name, span_of(self.file, node)))

    def module_if(self, s: ast.If) -> None:
        if self.frame.kind == "module" and is_main_guard(s.test):
            self.frame.module.main_blocks.append(s)  # the harness: see run_main
            return
        interp_control_flow.if_statement(self, s)

    def module_assert(self, s: ast.Assert) -> None:
        if self.frame.kind != "module" or not self.defining:
            interp_control_flow.assert_statement(self, s)
            return
        params = self.params
        dom = domain_of_assert(s.test, lambda n: self.static(self.eval(n)), params, self.frame.module.prefix)
        if dom is not None:
            name, values, rng = dom
            params.set_domain(name, values, rng)
            return
        cond = self.eval(s.test)
        if not isinstance(cond, IntVal):
            return  # a non-integer assert (a dtype, a string) says nothing about the graph
        message = None
        if s.msg is not None:
            m = self.static(self.eval(s.msg))
            message = m if isinstance(m, str) else None
        params.assertions.append(parameters.Assertion(cond.expr, message, span_of(self.file, s)))

    def run_module(self, module: ModuleInfo) -> None:
        """The top level of ``module``, statement by statement; a raise at top level (a
        refused configuration) is noted and the rest is still read."""
        saved_file = self.file
        self.frames = [self.frames[0].__class__(module, module.globals, kind="module")]
        self.file = module.file
        try:
            for stmt in module.tree.body:
                try:
                    self.exec_block([stmt])
                except PyRaise as exc:
                    self.notes.not_modelled(
                        span_of(module.file, stmt),
                        f"module-level code raises {exception_name(exc.value) or 'an exception'} "
                        "with the values the reader assumes (no argv, empty environment)",
                        "the statements after it are still read, as if it had not raised",
                    )
                except BudgetExceeded:
                    self.budget_note(module, stmt)
                    return
        finally:
            self.file = saved_file

    def budget_note(self, module: ModuleInfo, stmt: ast.AST) -> None:
        self.notes.not_modelled(
            span_of(module.file, self.budget.hit_at or stmt),
            f"module-level code past {self.budget.limit} interpreted statements",
            "the rest of this module's top level is not read: names it binds are unknown",
        )

    statements = {**PyInterpreter.statements, ast.If: module_if, ast.Assert: module_assert}


class Loader:
    """Parses the main file and the modules of the model tree it imports (each once)."""

    def __init__(self, notes: Notes, params: Params, budget: Budget | None = None):
        self.notes = notes
        self.params = params
        self.budget = budget or Budget()
        self.cache: dict[Path, ModuleInfo | None] = {}
        self.main: ModuleInfo | None = None

    def load_text(self, path: Path, text: str) -> ModuleInfo:
        tree = ast.parse(text, filename=str(path))
        module = ModuleInfo(path.stem, path, text, tree, "", is_main=True)
        self.main = module
        self.cache[path.resolve()] = module
        self._evaluate(module)
        return module

    def _evaluate(self, module: ModuleInfo) -> None:
        module.argv = argv_options(module.tree, module.file, module.text)
        interp = ModuleInterpreter(module, self)
        interp.run_module(module)
        _argv_domains(module, self, interp)

    # ---------------------------------------------------------------- import statements
    def import_module(self, importer: ModuleInfo, name: str, as_alias: bool, node: ast.AST) -> Val:
        """What ``import name`` (``as_alias``: ``import name as x``) binds."""
        if name in PL_MODULES:
            importer.is_pypto = True
            return PlRef(PL_MODULES[name])
        if name == "pypto" or name.startswith("pypto."):
            return std_modules.import_extern(name)
        parts = name.split(".")
        first = self.find(importer, parts[:1], node)
        if first is None:
            return std_modules.import_extern(name if as_alias else parts[0])
        current = first
        for i in range(1, len(parts)):
            sub = self.find_in_package(current, parts[i], node)
            if sub is None:
                return std_modules.import_extern(name) if as_alias else ModuleVal(first)
            current.globals.setdefault(parts[i], ModuleVal(sub))
            current = sub
        return ModuleVal(current if as_alias else first)

    def import_from(
        self, importer: ModuleInfo, module: str, level: int, name: str, node: ast.AST
    ) -> dict[str, Val]:
        """The names ``from module import name`` binds (all public ones for ``*``)."""
        if level == 0 and (module == "pypto" and name == "language"):
            importer.is_pypto = True
            return {name: PlRef("pl")}
        if level == 0 and module in PL_MODULES:
            importer.is_pypto = True
            short = PL_MODULES[module]
            if name == "distributed" and short == "pl":
                return {name: PlRef("pld")}
            return {name: PlRef(f"{short}.{name}")}
        if level == 0 and (module == "pypto" or module.startswith("pypto.")):
            return {name: std_modules.module_attribute(module, name)}
        source = self.resolve_from(importer, module, level, node)
        if source is None:
            if name == "*":
                return {}
            return {
                name: std_modules.module_attribute(module, name)
                if level == 0
                else Unknown(f"'{name}' from .{module}")
            }
        if name == "*":
            public = source.globals.get("__all__")
            names = [getattr(v, "value", None) for v in public.items] if isinstance(public, SeqVal) else None
            if names is None:
                names = [n for n in source.globals if not n.startswith("_")]
            return {k: source.globals[k] for k in names if isinstance(k, str) and k in source.globals}
        if name in source.globals:
            return {name: source.globals[name]}
        sub = self.find_in_package(source, name, node)
        if sub is not None:
            return {name: ModuleVal(sub)}
        return {name: Unknown(f"'{name}' is not defined by module {source.name}")}

    def resolve_from(self, importer: ModuleInfo, module: str, level: int, node: ast.AST) -> ModuleInfo | None:
        parts = [p for p in module.split(".") if p]
        if level == 0:
            return self.find(importer, parts, node)
        base = importer.path.parent
        for _ in range(level - 1):
            base = base.parent
        if not parts:
            init = base / "__init__.py"
            return self.load_path(init, node, importer) if init.is_file() else None
        return self._find_under(base, parts, importer, node)

    # ---------------------------------------------------------------- search
    def search_dirs(self, importer: ModuleInfo) -> list[Path]:
        """The importing file's folder and the script's (Python puts the script's first on
        ``sys.path``), then the script's ancestors, then the folders the code added to
        ``sys.path``."""
        main = self.main.path.parent if self.main is not None else importer.path.parent
        dirs = [importer.path.parent, main]
        p = main
        for _ in range(MAX_ANCESTORS):
            p = p.parent
            dirs.append(p)
        for item in read_context.host().path.items:
            value = getattr(item, "value", None)
            if isinstance(value, str):
                dirs.append(Path(value))
        return list(dict.fromkeys(dirs))

    def find(self, importer: ModuleInfo, parts: list[str], node: ast.AST) -> ModuleInfo | None:
        if not parts:
            return None
        for base in self.search_dirs(importer):
            found = self._find_under(base, parts, importer, node)
            if found is not None:
                return found
        return None

    def _find_under(
        self, base: Path, parts: list[str], importer: ModuleInfo, node: ast.AST
    ) -> ModuleInfo | None:
        """``base/a/b.py`` (or ``base/a/b/__init__.py``) for ``a.b``, loading each package on the way."""
        current: ModuleInfo | None = None
        for i, part in enumerate(parts):
            init = base.joinpath(*parts[: i + 1], "__init__.py")
            leaf = base.joinpath(*parts[:i], part + ".py")
            if init.is_file():
                nxt = self.load_path(init, node, importer)
            elif leaf.is_file():
                nxt = self.load_path(leaf, node, importer)
            else:
                return None
            if nxt is None:
                return None
            if current is not None:
                current.globals.setdefault(part, ModuleVal(nxt))
            current = nxt
        return current

    def find_in_package(self, package: ModuleInfo, name: str, node: ast.AST) -> ModuleInfo | None:
        """Submodule ``name`` of a package (``import a.b``, ``from a import b``)."""
        if package.path.name != "__init__.py":
            return None
        base = package.path.parent
        for candidate in (base / name / "__init__.py", base / f"{name}.py"):
            if candidate.is_file():
                return self.load_path(candidate, node, package)
        return None

    def load_path(self, path: Path, node: ast.AST, importer: ModuleInfo) -> ModuleInfo | None:
        key = path.resolve()
        if key in self.cache:
            return self.cache[key]  # a module being loaded is returned half-initialised, as in Python
        try:
            if path.stat().st_size > MAX_MODULE_BYTES:
                raise OSError("file too large")
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text, filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as err:
            self.notes.not_modelled(
                span_of(importer.file, node),
                f"module {path.name} could not be read ({type(err).__name__})",
                "its constants and functions are unknown here",
            )
            self.cache[key] = None
            return None
        name = path.parent.name if path.name == "__init__.py" else path.stem
        info = ModuleInfo(name, path, text, tree, "" if name == "config" else f"{name}.")
        self.cache[key] = info
        try:
            self._evaluate(info)
        except BudgetExceeded:
            pass
        return info

    # ---------------------------------------------------------------- the harness
    def run_main(self, module: ModuleInfo) -> None:
        """Run the file's ``__main__`` blocks with argv defaults (no parameter is redefined:
        it is the harness that calls the entry with the request it builds)."""
        if not module.main_blocks:
            return
        interp = ModuleInterpreter(module, self)
        interp.defining = False
        interp.frames = [interp.frames[0].__class__(module, module.globals, kind="module")]
        for block in module.main_blocks:
            try:
                interp.exec_block(block.body)
            except PyRaise:
                continue
            except BudgetExceeded:
                interp.budget_note(module, block)
                return


def _argv_domains(module: ModuleInfo, loader: Loader, ev: ModuleInterpreter) -> None:
    """Choices of argparse options tied to a module constant become its admissible set."""
    params = loader.params
    tied: dict[str, ArgOption] = {}
    for opt in module.argv.values():
        if isinstance(opt.default, ast.Name):
            v = module.globals.get(opt.default.id)
            if isinstance(v, IntVal) and isinstance(v.expr, Sym):
                root = params.root_param(v.expr.name)
                if root is not None:
                    tied[root] = opt
    for name, dest in main_rebindings(module.tree).items():
        opt = module.argv.get(dest)
        if opt is None:
            continue
        full = module.prefix + name
        root = params.root_param(full)
        if root is None and opt.default is not None:
            value = ev.eval(opt.default)
            if isinstance(value, IntVal):
                module.globals[name] = IntVal(params.define(full, value.expr, opt.span))
                root = params.root_param(full)
        if root is not None:
            tied.setdefault(root, opt)
    for name, opt in tied.items():
        if opt.choices is None:
            continue
        choices = ev.static(ev.eval(opt.choices))
        if isinstance(choices, tuple | list) and choices and all(isinstance(c, int) for c in choices):
            params.set_domain(name, sorted(set(choices)), None)
        elif isinstance(opt.choices, ast.Call) and dotted(opt.choices.func) == "range":
            rng = range_domain([ev.static(ev.eval(a)) for a in opt.choices.args])
            if rng is not None:
                params.set_domain(name, None, rng)
