"""The state of reading one entry: the ``Program`` it builds and the ``Frame`` of each call.

``Program`` collects what the orchestration reader and the kernel readers find (tasks,
tensors, runtime scalars, signal and window tensors, the rank count); ``graph`` turns it
into the IR graph. A ``Frame`` holds the locals of one orchestration function activation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering.ir import Task
from lowering.pypto_reader.constants import Params
from lowering.pypto_reader.modules import ModuleInfo
from lowering.pypto_reader.notes import Notes
from lowering.pypto_reader.tensors import TensorTable
from lowering.pypto_reader.values import ClassVal, FuncVal, SelfVal, Val
from lowering.source import Span
from lowering.symbolic import Const, Expr


@dataclass
class Frame:
    """Locals of one orchestration function activation."""

    module: ModuleInfo
    locals: dict[str, Val] = field(default_factory=dict)
    self_val: Val | None = None


@dataclass
class Program:
    """Everything read from one entry: tasks, tensors, scalars, ranks."""

    notes: Notes
    params: Params
    tensors: TensorTable = field(default_factory=TensorTable)
    tasks: list[Task] = field(default_factory=list)
    scalars: dict[str, tuple[str, Span]] = field(default_factory=dict)
    signal_tensors: set[str] = field(default_factory=set)
    window_tensors: set[str] = field(default_factory=set)
    task_names: set[str] = field(default_factory=set)
    ranks: Expr = Const(1)
    rank_params: frozenset[str] = frozenset()


def frame_for(func: FuncVal) -> Frame:
    """A fresh frame for a call of ``func``, with ``self`` bound for a ``@pl.program`` method."""
    frame = Frame(func.module)
    if func.owner is not None:
        cls = func.module.globals.get(func.owner)
        if isinstance(cls, ClassVal):
            frame.self_val = SelfVal(cls)
    return frame
