"""Golden adapter of ``hc_pre_fused.dsl``: ``hc_pre_golden`` with the fused kernel's RMS tree.

The fused kernel sums the squares in RMS_OK partials of consecutive chunks and folds them
in ascending order (docs/runtime-semantics.md §17.3: the reviewer's remark), so the golden is
evaluated with ``rms_splits=RMS_OK``; everything else is the separate kernel's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.deepseek_v4_flash.hc_pre_golden import TOLERANCES, make_inputs, reference

__all__ = ["TOLERANCES", "REDUCTION_TREES", "make_inputs", "golden"]

#: Read by rule N203 as a literal: RMS_OK partials of RMS_CHUNKS_PER_SPLIT chunks each.
REDUCTION_TREES = {
    "mixes_raw": {"splits": "LINEAR_OK", "order": "ascending", "dtype": "f32"},
    "sq_sum": {
        "splits": "RMS_OK",
        "chunks_per_split": "RMS_CHUNKS_PER_SPLIT",
        "order": "ascending",
        "dtype": "f32",
    },
}


def golden(inputs: list[dict], params: Mapping[str, int]) -> dict[str, np.ndarray]:
    return reference(inputs[0], params, rms_splits=params["RMS_OK"])
