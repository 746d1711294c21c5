"""The outcome of a run: one result per expectation (or failed step), per scenario, in total.

`run_files` returns a `Report` and prints its lines as they are decided; `phalanx scenario run`
exits non-zero unless `Report.ok`. Formatting lives here so that tests compare the exact text a
user reads: `  ✓ jobs[0] ...`, `  ✗ ...: expected ..., observed ...`, `N passed, M failed`.
"""

from __future__ import annotations

from dataclasses import dataclass

PASS_MARK, FAIL_MARK = "✓", "✗"


@dataclass(frozen=True)
class Result:
    label: str
    passed: bool
    detail: str = ""

    def line(self) -> str:
        mark = PASS_MARK if self.passed else FAIL_MARK
        return f"  {mark} {self.label}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class ScenarioReport:
    source: str
    name: str
    results: tuple[Result, ...]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return sum(not r.passed for r in self.results)


@dataclass(frozen=True)
class Report:
    scenarios: tuple[ScenarioReport, ...]

    @property
    def passed(self) -> int:
        return sum(s.passed for s in self.scenarios)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.scenarios)

    @property
    def ok(self) -> bool:
        return self.failed == 0 and bool(self.scenarios)

    def closing_line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"
