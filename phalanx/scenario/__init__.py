"""Scenarios: YAML files of a small cluster, steps and expectations, run against the stack.

`phalanx scenario run FILE...` calls `run_files(paths, stack)`; `Stack` is the seam to whatever
serves the Kubernetes API (`ExternalStack`: one started by `phalanx up`). The format is
/work/shared/scenarios/FORMAT.md; docs/scenarios.md explains it for users.
"""

from phalanx.scenario.loading import ScenarioError, load_scenario, parse_scenario
from phalanx.scenario.model import ClusterSpec, Scenario
from phalanx.scenario.report import Report, Result, ScenarioReport
from phalanx.scenario.runner import run_files, run_scenario
from phalanx.scenario.stack import ExternalStack, Stack, StackError

__all__ = [
    "ClusterSpec",
    "ExternalStack",
    "Report",
    "Result",
    "Scenario",
    "ScenarioError",
    "ScenarioReport",
    "Stack",
    "StackError",
    "load_scenario",
    "parse_scenario",
    "run_files",
    "run_scenario",
]
