"""The lint that runs before emission: does every kernel's allocation fit its core?

The writers place every buffer statically (``tiles``, ``aic``), so what a kernel asks for
is known exactly at these parameter values: the UB it reserves (in queue x buffers + out
queue + calc buffer), and on the cube L1, L0A, L0B and L0C. Each is compared with the
capacity of that memory on an A2/A3 AI core; an overflow is A711 at the task header,
naming the buffers live at the peak. (Rule C403 bounds the same memories for every
admissible parameter value from the IR alone; this one is the target's exact account.)
The 32-byte rules are met by construction (UB rows padded to 32 bytes, DataCopyPad where
a GM range is not provably aligned) or refused where they are made (A712, A713).
"""

from __future__ import annotations

from lowering.codegen.ascendc.diagnostics import UnsupportedForAscendC, refuse
from lowering.codegen.ascendc.kernel import Kernel
from lowering.codegen.ascendc.tiles import UB_BYTES
from lowering.ir import Task

#: Bytes per AI core on A2/A3 (dav-2201), the memories a kernel allocates from.
CAPACITY = {"UB": UB_BYTES, "L1": 524288, "L0A": 65536, "L0B": 65536, "L0C": 131072}


def check_budgets(kernel: Kernel, task: Task) -> list[UnsupportedForAscendC]:
    b = kernel.budget
    used = {"UB": b.ub} if kernel.core != "aic" else {}
    if kernel.core != "aiv":  # aic, or the AIC side of a mix kernel
        used.update({"L1": b.l1, "L0A": b.l0a, "L0B": b.l0b, "L0C": b.l0c})
    errors = []
    for memory, nbytes in used.items():
        if nbytes <= CAPACITY[memory]:
            continue
        if memory == "UB":
            detail = (
                f"calc {b.calc} B (live at the peak: {b.peaks.get('calc') or 'none'}), "
                f"in queue {b.in_count} x {b.in_bytes} B, out queue {b.out_count} x {b.out_bytes} B"
            )
        else:
            detail = f"live at the peak: {b.peaks.get(memory.lower()) or 'operand staging'}"
        errors.append(
            refuse(
                "A711",
                f"task {task.name} needs {nbytes} B of {memory}, more than the {CAPACITY[memory]} B of an "
                f"A2/A3 core ({detail})",
                task.header_span,
                hint="use smaller tiles (chunk the loop) or split the task",
            )
        )
    return errors
