"""The scheduling state of a task instance is listed once (``runtime.machine.INST_STATE``, what
the explorer's and the MPI backend's snapshots keep), and the explorer's hand-written restore
writes each of its fields back to its own value."""

from __future__ import annotations

from runtime.machine import INST_STATE, TaskInst
from runtime.program import TaskSpec
from runtime.verify.snapshots import _inst_get, _set_inst

#: What a TaskInst holds that is not scheduling state: its identity and static shape, its graph
#: edges and memory, its block records, the barrier list (both rebuilt from the blocks), and
#: ``complete_at``, which only reports and traces read.
NOT_STATE = {
    "spec",
    "si",
    "rank",
    "round",
    "nblocks",
    "shape",
    "producers",
    "consumers",
    "blocks",
    "mem",
    "barrier_wait",
    "complete_at",
}


def _inst() -> TaskInst:
    return TaskInst(TaskSpec("t", "aiv", 1, lambda ctx: None), 0, 0, 0, None)


def test_every_field_of_a_task_instance_is_either_state_or_named_as_not_state():
    assert set(TaskInst.__slots__) == set(INST_STATE) | NOT_STATE
    assert not set(INST_STATE) & NOT_STATE


def test_the_explorer_restores_each_state_field_to_its_own_value():
    inst = _inst()
    values = tuple(100 + i for i in range(len(INST_STATE)))
    _set_inst(inst, values)
    assert {f: getattr(inst, f) for f in INST_STATE} == dict(zip(INST_STATE, values, strict=True))
    assert _inst_get(inst) == values
