"""Numerics: order-dependent floating-point results, goldens whose reduction tree differs
from the kernel's, and sentinel constants (N201-N204).

N203 compares ``Graph.reductions`` (recorded by the ``reduce_sum`` lowering and by
layer-level ``reduction`` statements) with the ``REDUCTION_TREES`` literal of the layer's
golden, which ``lowering.golden_trees`` reads without importing the golden.
"""
