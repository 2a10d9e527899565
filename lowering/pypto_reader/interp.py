"""A static interpreter of Python statements: the reader's model of import time and host code.

Module-level code of a model file computes its configuration: dataclass configs and their
``dataclasses.replace``, attributes of imported modules reassigned, argv parsed for its
defaults, a factory that defines and returns the kernel the file uses. :class:`PyInterpreter`
runs such code over abstract values (``lowering.pypto_reader.values``) with Python's own
semantics, frame by frame, without importing or executing anything: calls of the file's
functions and classes are interpreted, builtins come from ``builtin_functions`` and
``std_modules``, everything outside the model tree is opaque. Work is bounded (``MAX_STEPS``
statements per read, ``MAX_DEPTH`` calls deep); what exceeds a bound or cannot be decided
becomes ``Unknown``, and the interpreters built on this one (module level, orchestration) note
it where it matters.

Where a condition cannot be decided, both branches run and the names they bind differently
become unknown (a loop over an unknown iterable makes its names unknown); an exception that
nothing catches ends the function it was raised in, as in Python.

The class is the interpreter's interface, as :class:`~lowering.pypto_reader.exprs.Evaluator`
is the evaluator's: its state (frames, depth, the read's budget and loader), the table of
statement handlers (``statements``: node type -> function), the hooks the interpreters built
on it override and the operations other readers call. Each kind of work is done by the
functions of its own module, on the interpreter they are given (so a subclass's overrides
apply inside them):
``interp_frames`` (frames, names and the targets a value is stored to), ``interp_statements``
(running a block and the straight-line statements), ``interp_control_flow`` (branches, loops
and exceptions) and ``interp_definitions`` (functions, classes, decorators and calls of the
file's own functions), with the bounds and control-flow signals in ``interp_control``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from lowering.pypto_reader import interp_control_flow, interp_definitions, interp_frames, interp_statements
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.interp_control import Budget
from lowering.pypto_reader.interp_frames import Frame
from lowering.pypto_reader.notes import Notes
from lowering.pypto_reader.values import ClassVal, FuncVal, Val

if TYPE_CHECKING:
    from lowering.pypto_reader.modules import Loader, ModuleInfo


class PyInterpreter(Evaluator):
    """Interprets Python statements over abstract values; subclasses add what ``pl`` means."""

    #: How each kind of statement runs: a function of (interpreter, node). An interpreter built
    #: on this one extends the table (``{**PyInterpreter.statements, ast.For: ...}``); a kind
    #: missing from it is ``unsupported_statement``.
    statements: ClassVar[dict[type[ast.stmt], Callable[[Any, Any], None]]] = {
        ast.Expr: interp_statements.expression_statement,
        ast.Assign: interp_statements.assignment,
        ast.AnnAssign: interp_statements.annotated_assignment,
        ast.AugAssign: interp_statements.augmented_assignment,
        ast.Delete: interp_statements.delete,
        ast.Pass: interp_statements.no_effect,
        ast.Global: interp_statements.global_statement,
        ast.Nonlocal: interp_statements.no_effect,
        ast.With: interp_statements.with_statement,
        ast.Import: interp_statements.import_statement,
        ast.ImportFrom: interp_statements.import_from_statement,
        ast.Return: interp_control_flow.return_statement,
        ast.Break: interp_control_flow.break_statement,
        ast.Continue: interp_control_flow.continue_statement,
        ast.Raise: interp_control_flow.raise_statement,
        ast.Assert: interp_control_flow.assert_statement,
        ast.If: interp_control_flow.if_statement,
        ast.For: interp_control_flow.for_statement,
        ast.While: interp_control_flow.while_statement,
        ast.Try: interp_control_flow.try_statement,
        ast.TryStar: interp_control_flow.try_statement,
        ast.FunctionDef: interp_definitions.function_definition,
        ast.AsyncFunctionDef: interp_definitions.function_definition,
        ast.ClassDef: interp_definitions.class_definition,
    }
    loop_limit: int | None = None  # host code sets HOST_LOOP_STEPS; orchestration loops make tasks
    _class_name: str | None = None  # the class whose body is running, the owner of its methods

    def __init__(
        self,
        module: ModuleInfo,
        notes: Notes,
        env: Callable[[], dict[str, int]],
        loader: Loader | None,
        budget: Budget,
    ):
        super().__init__(module.file, notes, env)
        self.loader = loader
        self.budget = budget
        self.frames: list[Frame] = [Frame(module, module.globals, kind="module")]
        self.depth = 0

    # ---------------------------------------------------------------- frames and names
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def lookup(self, name: str, node: ast.AST) -> Val:
        return interp_frames.lookup(self, name, node)

    def module_name(self, module: ModuleInfo) -> str:
        return module.name

    def bind_name(self, name: str, value: Val, node: ast.AST) -> None:
        interp_frames.bind_name(self, name, value, node)

    def bind_global(self, module: ModuleInfo, name: str, value: Val, node: ast.AST) -> None:
        """A module-level name bound (the module interpreter makes integers parameters)."""
        module.globals[name] = value

    def push_scope(self) -> object:
        return interp_frames.push_scope(self)

    def pop_scope(self, token: object) -> None:
        del self.frames[int(token) - 1 :]  # type: ignore[call-overload]

    def bind_target(self, target: ast.expr, value: Val) -> bool:
        return interp_frames.bind_target(self, target, value)

    def store_other(self, base: Val, target: ast.Subscript, value: Val) -> None:
        """``base[...] = value`` on anything but a list or dict (tensors, task-id arrays)."""
        return None

    def index(self, base: Val, key: Val) -> Val:
        return interp_frames.index(self, base, key)

    # ---------------------------------------------------------------- straight-line statements
    def exec_block(self, stmts: list[ast.stmt]) -> None:
        interp_statements.exec_block(self, stmts)

    def unsupported_statement(self, s: ast.stmt) -> None:
        """A statement kind the interpreter does not run (``match``, ``async``): its names are unknown."""
        interp_statements.havoc(self, s)

    # ---------------------------------------------------------------- control flow
    def undecided_if(self, s: ast.If) -> None:
        interp_control_flow.undecided_if(self, s)

    def same(self, a: Val, b: Val) -> bool:
        return interp_control_flow.same(self, a, b)

    # ---------------------------------------------------------------- definitions and calls
    def make_function(self, node: ast.FunctionDef | ast.Lambda) -> Val:
        return interp_definitions.define_function(self, node)

    def call_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        return interp_definitions.call_function(self, func, args, kwargs, node)

    def run_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        return interp_definitions.run_function(self, func, args, kwargs, node)

    def bind_arguments(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val]) -> dict[str, Val] | None:
        return interp_definitions.bind_arguments(self, func, args, kwargs)

    def field_default(self, cls: ClassVal, default: ast.expr) -> Val:
        return interp_definitions.field_default(self, cls, default)

    def instantiate(self, cls: ClassVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        return interp_definitions.instantiate(self, cls, args, kwargs, node)
