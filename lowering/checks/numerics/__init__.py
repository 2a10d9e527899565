"""Numerics: order-dependent floating-point results and sentinel constants (N201-N204).

N203 ``golden_tree_mismatch`` (R5) is reserved and not implemented: a layer can name its
golden (``golden "file.py"``) but neither the layer nor the golden declares the reduction
tree in a form dslc can compare. It needs (1) a reduction summary in the IR, per
accumulator: split count, per-split chunk order, cross-split order, accumulator dtype,
extracted from the bodies (``matmul_acc`` loops, partial stores, the reduce task's fold),
and (2) the golden's tree as data (e.g. a ``reduction`` table exported by the golden
module, such as ``HcPreConfig.splits`` / ``rms_splits`` / ``k_group``), or a golden that
dslc generates from the same tree (the ordered-reduce lowering).
"""
