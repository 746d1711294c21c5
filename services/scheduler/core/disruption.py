"""The pdb plugin: PodDisruptionBudgets bound which victims preempt and reclaim may choose.

`build_context` makes one `DisruptionGuard` per cycle from the snapshot's budgets; the evict
actions ask `allows(batch)` before adding a batch of victims to what they will evict, and pass over
a batch it refuses, looking for other victims instead. As Volcano's pdb plugin does, a budget's
`disruptions_allowed` (its status, as the disruption controller computed it) is what the whole
cycle may take from the pods the budget covers: a task evicted earlier in the cycle counts against
it (found from the working state, so a trial that is rolled back gives its evictions back), and so
do evictions decided in earlier cycles and not yet carried out (the budget's status does not count
them yet), and every other member of the batch. Without budgets, or without `pdb` in the configuration (with
enablePreemptable / enableReclaimable on for the action), every batch is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.plan import PREEMPT
from services.scheduler.core.predicates import label_selector_matches
from services.scheduler.core.snapshot import RELEASING, DisruptionBudget, TaskInfo
from services.scheduler.core.state import TaskView

_SWITCH = {PREEMPT: "enablePreemptable"}  # any other mode (reclaim) is judged by enableReclaimable


def covers(budget: DisruptionBudget, task: TaskInfo) -> bool:
    """policy/v1: same namespace, and the label selector matches (null selects none, {} all)."""
    if budget.namespace != task.namespace or budget.selector is None:
        return False
    if not budget.selector:
        return True
    return label_selector_matches(budget.selector, task.labels)


class DisruptionGuard:
    """The budgets of one cycle and the tasks each covers."""

    def __init__(self, budgets: Sequence[DisruptionBudget], tasks: Iterable[TaskView], conf: SchedulerConf):
        self._conf = conf
        self._budgets = tuple(budgets)
        self._covered: list[list[TaskView]] = [[] for _ in self._budgets]
        self._budgets_of: dict[str, list[int]] = {}
        if not self._budgets or not conf.enabled("pdb"):
            return
        for task in tasks:
            for index, budget in enumerate(self._budgets):
                if covers(budget, task.info):
                    self._covered[index].append(task)
                    self._budgets_of.setdefault(task.info.uid, []).append(index)

    def allows(self, batch: Iterable[TaskView], mode: str) -> bool:
        """True when evicting `batch`, after what this cycle already evicted, leaves every budget
        covering one of its tasks within its disruptions allowed."""
        if not self._budgets_of or not self._conf.enabled("pdb", _SWITCH.get(mode, "enableReclaimable")):
            return True
        wanted: dict[int, int] = {}
        for task in batch:
            for index in self._budgets_of.get(task.info.uid, ()):
                wanted[index] = wanted.get(index, 0) + 1
        for index, count in wanted.items():
            if self._evicted(index) + count > self._budgets[index].disruptions_allowed:
                return False
        return True

    def _evicted(self, index: int) -> int:
        """Tasks of budget `index` already taken but not in its status: those this cycle's working
        state evicted (Releasing now, not in the snapshot) and those whose earlier eviction is
        still pending. A pod already terminating is counted by the budget's own status."""
        return sum(
            1
            for t in self._covered[index]
            if t.info.eviction_pending or (t.status == RELEASING and t.info.status != RELEASING)
        )
