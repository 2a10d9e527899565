"""The state of reading one entry: the ``Program`` it builds.

``Program`` collects what the orchestration reader and the kernel readers find (tasks,
tensors, runtime scalars, signal and window tensors, the rank count); ``graph`` turns it
into the IR graph. ``spec_shapes`` are the shapes the file's harness gives tensors that the
entry declares as bare ``pl.Tensor`` (their shape is specialised from the request).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering.ir import Task
from lowering.pypto_reader.constants import Params
from lowering.pypto_reader.host_sync import HostSync
from lowering.pypto_reader.kernel_cache import KernelCache
from lowering.pypto_reader.notes import Notes
from lowering.pypto_reader.tensors import TensorTable
from lowering.source import Span
from lowering.symbolic import Const, Expr


@dataclass(frozen=True)
class ReadOnce:
    """The value of an orchestration loop variable whose loop the reader read once (its trip
    count is unknown): ``loop`` tells the loop executions apart, so that a task knows which
    read-once loops it stands for (``Task.repeated``)."""

    loop: int

    def __str__(self) -> str:
        return "*"


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
    spec_shapes: dict[str, tuple[Expr, ...]] = field(default_factory=dict)
    spec_dtypes: dict[str, str] = field(default_factory=dict)
    kernels: KernelCache = field(default_factory=KernelCache)
    host_sync: HostSync = field(default_factory=HostSync)  # host pl.read/pl.write the orchestrator waits on
    incomplete: str = ""  # why tasks are missing (``Graph.incomplete``)
    read_once_loops: int = 0  # read-once loop executions so far (``ReadOnce.loop``)

    def read_once(self) -> ReadOnce:
        self.read_once_loops += 1
        return ReadOnce(self.read_once_loops)
