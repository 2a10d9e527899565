"""The program format the simulator runs: tensors, tasks and their edges.

This is the whole contract between the code generator and the simulator.  A generated NumPy
module builds one :class:`Program` (a frozen, hashable-by-identity description) and hands it to
:func:`runtime.simulator.simulate`.  Nothing here knows about the DSL or the IR: a task is a
name, a resource shape, a grid size, a Python kernel and the indices of its producers.

Why indices and not names for edges: the runtime sees one TaskId per submit and consumers name
producers by id (docs/runtime-semantics.md §2); indices into ``Program.tasks`` are that id, and
requiring ``dep < own index`` is exactly the runtime's rule that a task can only wait on tasks
submitted before it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - imported for annotations only
    from runtime.memory import BlockContext, RankMemory

#: Tensor kinds.  ``window`` tensors are symmetric across ranks (same name on every rank) and
#: are the only tensors a peer may write (``ctx.peer``); ``signal`` tensors are int32 counter
#: cells that ``notify``/``wait`` operate on.
TENSOR_KINDS = ("input", "output", "inout", "scratch", "window", "signal")

#: Kinds returned in ``RunResult.outputs``.
OUTPUT_KINDS = ("output", "inout", "window")

#: Task resource shapes: one AIC core, one AIV core, or one whole cluster (1 AIC + 2 AIV).
SHAPES = ("aic", "aiv", "mix")

#: Accepted dtype names.  ``bfloat16`` has no NumPy dtype; its values are stored as float32.
DTYPES = ("float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool", "float64")

Kernel = Callable[["BlockContext"], "Generator[Any, None, None] | None"]


def numpy_dtype(dtype: str) -> np.dtype:
    """Return the NumPy dtype used to store a tensor of ``dtype`` (bfloat16 -> float32)."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


@dataclass(frozen=True)
class TensorSpec:
    """One named tensor of the program, allocated once per rank."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in TENSOR_KINDS:
            raise ValueError(f"tensor {self.name!r}: kind {self.kind!r} not in {TENSOR_KINDS}")
        numpy_dtype(self.dtype)
        if any((not isinstance(d, (int, np.integer))) or d < 0 for d in self.shape):
            raise ValueError(f"tensor {self.name!r}: shape {self.shape!r} must be non-negative ints")
        if self.kind == "signal" and self.dtype != "int32":
            raise ValueError(f"signal {self.name!r} must be int32 (signal cells are INT32 counters)")


@dataclass(frozen=True)
class TaskSpec:
    """One submit: a kernel run once per block of an SPMD grid on cores of one shape.

    ``deps`` name producers of the same round, ``prev_round_deps`` producers of the previous
    round (ignored in round 0).  ``notifier``/``waiter`` are optional hints for the adversarial
    policy; it also detects both from the kernel's code and from what blocks actually do.
    """

    name: str
    shape: str
    blocks: int
    kernel: Kernel
    deps: tuple[int, ...] = ()
    prev_round_deps: tuple[int, ...] = ()
    early_resolve: bool = False
    sync_start: bool = False
    predicate: Callable[[RankMemory], bool] | None = None
    cost: int = 1
    notifier: bool = False
    waiter: bool = False

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"task {self.name!r}: shape {self.shape!r} not in {SHAPES}")
        if not isinstance(self.blocks, (int, np.integer)) or self.blocks < 0:
            raise ValueError(f"task {self.name!r}: blocks must be a non-negative int, got {self.blocks!r}")
        if not isinstance(self.cost, (int, np.integer)) or self.cost < 0:
            raise ValueError(f"task {self.name!r}: cost must be a non-negative int, got {self.cost!r}")
        if not callable(self.kernel):
            raise ValueError(f"task {self.name!r}: kernel is not callable")


@dataclass(frozen=True)
class Program:
    """A task graph in submission order plus the tensors and runtime scalars it uses."""

    name: str
    tensors: tuple[TensorSpec, ...]
    scalars: tuple[str, ...]
    tasks: tuple[TaskSpec, ...]

    def tensor(self, name: str) -> TensorSpec:
        """Return the spec of tensor ``name`` (KeyError with the known names otherwise)."""
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(
            f"program {self.name!r} has no tensor {name!r}; known: {[t.name for t in self.tensors]}"
        )

    def validate(self) -> None:
        """Check the structural rules the simulator relies on; raise ValueError naming the culprit."""
        seen: set[str] = set()
        for t in self.tensors:
            if t.name in seen:
                raise ValueError(f"program {self.name!r}: duplicate tensor {t.name!r}")
            seen.add(t.name)
        names: set[str] = set()
        for i, task in enumerate(self.tasks):
            if task.name in names:
                raise ValueError(f"program {self.name!r}: duplicate task name {task.name!r}")
            names.add(task.name)
            for d in task.deps:
                if not isinstance(d, (int, np.integer)) or not 0 <= d < i:
                    raise ValueError(
                        f"task {task.name!r} (index {i}): dep {d!r} must index an earlier task (0..{i - 1})"
                    )
            if len(set(task.deps)) != len(task.deps):
                raise ValueError(f"task {task.name!r}: duplicate entries in deps {task.deps}")
            for d in task.prev_round_deps:
                if not isinstance(d, (int, np.integer)) or not 0 <= d < len(self.tasks):
                    raise ValueError(f"task {task.name!r}: prev_round_dep {d!r} out of range")
            if len(set(task.prev_round_deps)) != len(task.prev_round_deps):
                raise ValueError(f"task {task.name!r}: duplicate entries in prev_round_deps")
