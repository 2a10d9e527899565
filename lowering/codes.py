"""What a diagnostic code is: one type for every code dslc emits.

Codes are declared beside the code that emits them (front-end errors in ``dsl.codes``, lint
rules as modules of ``lowering.checks``, suppression codes in ``lowering.checks.suppressions``,
PyPTO-reader codes in ``lowering.pypto_reader.notes``, AscendC target codes in
``lowering.codegen.ascendc.diagnostics``); ``dsl.driver.codes`` collects them into the one
registry that ``dslc explain``, the docs table, SARIF and the configuration's code selectors
read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lowering.source import Severity


@dataclass(frozen=True)
class Code:
    """One diagnostic code: what ``dslc explain CODE`` prints and the docs table lists."""

    code: str
    summary: str
    explanation: str
    severity: Severity = Severity.ERROR
    family: str = ""
    name: str = ""  # snake_case; from the summary when not given
    docs: str = ""  # the full page; ``CODE: summary`` and the explanation when not given

    @property
    def label(self) -> str:
        return self.name or re.sub(r"\W+", "_", self.summary).strip("_").lower()

    @property
    def page(self) -> str:
        return self.docs or f"{self.code}: {self.summary}\n\n{self.explanation}"
