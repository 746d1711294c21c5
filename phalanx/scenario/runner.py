"""Running scenario files against a stack: `run_files(paths, stack) -> Report`.

For each file: parse it, reset the stack to the scenario's cluster, start the observer, then
carry out the steps in order. An `expect` step polls its probes every 0.2 s, until each has held
once (`within`, default 30 s) or, once all hold, for as long as all must hold (`stays`), and
prints one line per expectation. A step that cannot be carried out, or a refused write with
no `denied` after it, fails the scenario there. The closing line is `N passed, M failed`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from phalanx import progress
from phalanx.scenario.expectations import Expectation
from phalanx.scenario.kube import Kube, KubeError
from phalanx.scenario.loading import ScenarioError, load_scenario
from phalanx.scenario.model import Scenario, Step
from phalanx.scenario.observer import Observer
from phalanx.scenario.probes import History, Probe, ProbeBuilder
from phalanx.scenario.report import Report, Result, ScenarioReport
from phalanx.scenario.stack import Stack, StackError
from phalanx.scenario.steps import StepError, Steps

POLL_INTERVAL = 0.2
# How long a `stays` waits for its conditions to hold at all before timing how long they hold.
STAYS_SETTLE = 5.0
Emit = Callable[[str], None]


def print_line(line: str) -> None:
    print(line, flush=True)


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory stands for its *.yaml and *.yml files, sorted."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
        else:
            files.append(path)
    return files


def _load_all(files: list[Path]) -> list[tuple[Path, Scenario | ScenarioError]]:
    loaded: list[tuple[Path, Scenario | ScenarioError]] = []
    names: dict[tuple[Path, str], Path] = {}
    for path in files:
        try:
            scenario: Scenario | ScenarioError = load_scenario(path)
        except ScenarioError as error:
            scenario = error
        if isinstance(scenario, Scenario):
            first = names.setdefault((path.resolve().parent, scenario.name), path)
            if first != path:
                scenario = ScenarioError(str(path), [f"name {scenario.name!r} is already used by {first}"])
        loaded.append((path, scenario))
    return loaded


def run_files(
    paths: Sequence[Path],
    stack: Stack,
    *,
    emit: Emit = print_line,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    shown: progress.Steps | None = None,
) -> Report:
    """Run every scenario in `paths` (files or folders) on `stack`, each on a fresh cluster."""
    shown = shown or progress.Silent()
    reports: list[ScenarioReport] = []
    loaded = _load_all(expand_paths(paths))
    shown.step(f"{len(loaded)} scenarios", total=len(loaded))
    for path, scenario in loaded:
        shown.count(len(reports))
        if isinstance(scenario, ScenarioError):
            emit(f"{path}")
            results = tuple(Result(problem, False) for problem in scenario.problems)
            for result in results:
                emit(result.line())
            reports.append(ScenarioReport(str(path), path.stem, results))
            continue
        reports.append(run_scenario(scenario, stack, str(path), emit=emit, clock=clock, sleep=sleep))
    shown.count(len(reports))
    shown.done()  # before the closing line, which stays the last line printed
    report = Report(tuple(reports))
    emit(report.closing_line())
    return report


def run_scenario(
    scenario: Scenario,
    stack: Stack,
    source: str,
    *,
    emit: Emit = print_line,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ScenarioReport:
    emit(f"{scenario.name} ({source})")
    results: list[Result] = []

    def record(result: Result) -> None:
        results.append(result)
        emit(result.line())

    try:
        stack.reset(scenario.cluster, scenario.scheduler.conf if scenario.scheduler else None)
    except (StackError, KubeError) as error:
        record(Result("fresh cluster", False, str(error)))
        return ScenarioReport(source, scenario.name, tuple(results))
    kube = Kube(stack.kubeconfig, stack.simulator_url)
    started = clock()
    observer = Observer(kube, lambda: clock() - started)
    try:
        observer.start()
        _run_steps(scenario.steps, kube, observer, record, clock, sleep)
    finally:
        observer.stop()
        kube.close()
    return ScenarioReport(source, scenario.name, tuple(results))


def _next_is_denied(steps: Sequence[Step], index: int) -> bool:
    following = steps[index + 1] if index + 1 < len(steps) else None
    return following is not None and following.expect is not None and (following.expect.denied is not None)


def _run_steps(
    steps: Sequence[Step],
    kube: Kube,
    observer: Observer,
    record: Callable[[Result], None],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> None:
    history = History()
    actions = Steps(kube, observer, sleep)
    probes = ProbeBuilder(kube, observer, history)
    for index, step in enumerate(steps):
        label = f"steps[{index}] {step.kind}"
        if step.expect is not None:
            for result in evaluate(probes.build(step.expect), step.expect, clock, sleep):
                record(result)
            history.previous_uids = observer.pod_uids()
            history.last_write = history.refusal = None
            continue
        try:
            refusal = actions.run(step)
        except StepError as error:
            record(Result(label, False, f"{error} (the scenario stops here)"))
            return
        history.last_write, history.refusal = (label, refusal) if step.writes else (None, None)
        if refusal is not None and not _next_is_denied(steps, index):
            record(Result(label, False, f"refused: {refusal} (the scenario stops here)"))
            return


def _settle(
    probes: list[Probe], clock: Callable[[], float], sleep: Callable[[float], None]
) -> dict[int, Result]:
    """Before a `stays`: wait until every condition holds at once (what an apply just set in
    motion, such as a first status, takes a moment); those that never do have failed."""
    deadline = clock() + STAYS_SETTLE
    while True:
        found = {i: _check(probe) for i, probe in enumerate(probes)}
        if not any(found.values()):
            return {}
        if clock() >= deadline:
            return {
                i: Result(
                    probes[i].label,
                    False,
                    f"{'; '.join(mismatches)} (never held within {STAYS_SETTLE:g}s)",
                )
                for i, mismatches in found.items()
                if mismatches
            }
        sleep(POLL_INTERVAL)


def evaluate(
    probes: list[Probe],
    expect: Expectation,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Result]:
    """Poll every probe until each held once (within) or as long as all must hold (stays)."""
    throughout, seconds = expect.holds_throughout, expect.seconds
    if not probes:
        if throughout:
            sleep(seconds)
        return []
    decided = _settle(probes, clock, sleep) if throughout else {}
    began = clock()
    deadline = began + seconds
    last: dict[int, list[str]] = {}
    while True:
        for i, probe in enumerate(probes):
            if i in decided:
                continue
            mismatches = _check(probe)
            if throughout and mismatches:
                when = f"after {clock() - began:.1f}s of {seconds:g}s"
                decided[i] = Result(probe.label, False, f"{'; '.join(mismatches)} ({when})")
            elif not throughout and not mismatches:
                decided[i] = Result(probe.label, True)
            else:
                last[i] = mismatches
        remaining = deadline - clock()
        if len(decided) == len(probes) or remaining <= 0:
            break
        sleep(min(POLL_INTERVAL, remaining))
    for i, probe in enumerate(probes):
        if i not in decided:
            decided[i] = (
                Result(probe.label, True)
                if throughout
                else Result(probe.label, False, f"{'; '.join(last[i])} (within {seconds:g}s)")
            )
    return [decided[i] for i in range(len(probes))]


def _check(probe: Probe) -> list[str]:
    try:
        return probe.check()
    except KubeError as error:
        return [f"cannot observe: {error}"]
    except Exception as error:  # a client failure must not end the run: it is one failed poll
        return [f"cannot observe: {type(error).__name__}: {error}"]
