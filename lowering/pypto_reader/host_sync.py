"""Host-side ``pl.read`` / ``pl.write`` in orchestration: the orchestrator blocks on them.

PyPTO runs an orchestration-level ``pl.read(t, ...)`` as ``get_tensor_data``: the orchestrator
waits until the tasks that write ``t`` complete; a ``pl.write`` (``set_tensor_data``) waits
for its writers *and* readers (docs/runtime-semantics.md §4). Nothing is submitted
while it waits, so every task submitted after such a call starts after those tasks: a
``host`` edge from each of them to every later task (its span is the host call). It orders
races and handshakes; the speculation rules leave it out (``checks.order.predecessors``):
the later task is submitted after its producer completed.

The barrier is kept small: when every task the new call waits for was submitted after the
previous call, those tasks already come after the previous barrier, which is then implied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering.ir import DepRef, Task
from lowering.pypto_reader.tensors import TensorTable
from lowering.source import Span


@dataclass
class HostSync:
    """The tasks every later submission waits for, with the host call that made it wait."""

    barrier: dict[str, Span] = field(default_factory=dict)
    since: int = 0  # tasks submitted when the barrier was last set
    # Per base buffer, the tasks submitted so far that write it and that only read it; tasks
    # are indexed once, when the first host call after their submission looks.
    writers: dict[str, list[Task]] = field(default_factory=dict)
    readers: dict[str, list[Task]] = field(default_factory=dict)
    indexed: int = 0

    def _index(self, tasks: list[Task], tensors: TensorTable) -> None:
        for t in tasks[self.indexed :]:
            written = {tensors.base(a.tensor) for a in t.accesses if a.writes}
            read = {tensors.base(a.tensor) for a in t.accesses} - written  # anchor reads consume too
            for base in written:
                self.writers.setdefault(base, []).append(t)
            for base in read:
                self.readers.setdefault(base, []).append(t)
        self.indexed = len(tasks)

    def block_on(
        self, tasks: list[Task], tensors: TensorTable, tensor: str, span: Span, readers: bool
    ) -> bool:
        """The orchestrator waits for the writers (and, for a write, the readers) of ``tensor``
        submitted so far; False when no task touches it (nothing to wait for)."""
        self._index(tasks, tensors)
        base = tensors.base(tensor)
        waited = self.writers.get(base, []) + (self.readers.get(base, []) if readers else [])
        if not waited:
            return False
        if all(t.order >= self.since for t in waited):
            self.barrier = {}  # every task waited for comes after the previous barrier
        self.barrier.update((t.name, span) for t in waited)
        self.since = len(tasks)
        return True

    def after(self, after: list[DepRef]) -> list[DepRef]:
        """``after`` with an edge from every task of the barrier it does not name already."""
        named = {d.target for d in after}
        return [
            *after,
            *(DepRef(name, span, host=True) for name, span in self.barrier.items() if name not in named),
        ]
