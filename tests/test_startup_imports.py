"""What a ``dslc`` process imports before it works: checking DSL layers never loads the PyPTO
reader (about a third of the start-up), which is imported on first use of ``read_pypto``,
nor jinja2, which only the code generators need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import sys
from dsl.driver.cli import main
try:
    main(["check", "models/deepseek_v4_flash/hc_post.dsl"])
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m.startswith("lowering.pypto_reader"))
print(",".join(loaded))
print("jinja2" in sys.modules)
import lowering.pypto_reader as reader
reader.read_pypto  # first use
print("lowering.pypto_reader.read" in sys.modules)
"""


def test_checking_a_dsl_layer_does_not_load_the_pypto_reader(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"DSLC_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out[-3] == "lowering.pypto_reader,lowering.pypto_reader.notes"
    assert out[-2] == "False"  # no templates either: they are for the code generators
    assert out[-1] == "True"
