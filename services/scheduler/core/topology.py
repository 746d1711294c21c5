"""The task-topology plugin: which tasks of a job go first and which nodes they prefer.

A Volcano Job names relations between its tasks (by task name, volcano.sh/task-spec) in
annotations that its PodGroup carries: `volcano.sh/task-topology-affinity: "ps,worker;x"`
(groups separated by ";"; a group of several tasks wants them together, a group of one wants
that task's pods together), `volcano.sh/task-topology-anti-affinity` (the same, apart) and
`volcano.sh/task-topology-task-order: "ps,worker"`. `build_context` reads them once per cycle:
the order sorts the gang's pending tasks (after task priority), and `Placer` adds `bonus` to a
node's score while placing such a task: for each task of the same gang already on the node,
plus one if affine, minus one if anti-affine, scaled to 0..100 by the gang's size and multiplied
by the plugin argument `task-topology.weight` (default 1). As in Volcano, annotations naming a
task the job does not have, or a task twice in one group, are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.scheduler.core.snapshot import GangInfo, TaskInfo
from services.scheduler.core.state import GangView, TaskView
from shared.volcano.keys import TASK_TOPOLOGY_AFFINITY as AFFINITY
from shared.volcano.keys import TASK_TOPOLOGY_ANTI_AFFINITY as ANTI_AFFINITY
from shared.volcano.keys import TASK_TOPOLOGY_ORDER as TASK_ORDER

MAX_SCORE = 100.0


def role_of(task: TaskInfo) -> str:
    """The task's name in its job: its volcano.sh/task-spec, else from "<job>-<task>-<index>"."""
    if task.task_role:
        return task.task_role
    parts = task.name.split("-")
    return parts[-2] if len(parts) >= 2 else task.name


@dataclass(frozen=True, slots=True)
class TaskTopology:
    affine: Mapping[str, frozenset[str]]  # task name -> task names it wants to share nodes with
    anti: Mapping[str, frozenset[str]]  # task name -> task names it wants to keep away from
    order: tuple[str, ...]

    def rank(self, role: str) -> int:
        return self.order.index(role) if role in self.order else len(self.order)


def read_topology(gang: GangInfo) -> TaskTopology | None:
    """The gang's task topology, or None if it names none or names it wrongly."""
    annotations = gang.annotations
    if not any(key in annotations for key in (AFFINITY, ANTI_AFFINITY, TASK_ORDER)):
        return None
    roles = {role_of(task) for task in gang.tasks}
    affine = _relations(annotations.get(AFFINITY, ""), roles)
    anti = _relations(annotations.get(ANTI_AFFINITY, ""), roles)
    order = tuple(name.strip() for name in annotations.get(TASK_ORDER, "").split(",") if name.strip())
    if affine is None or anti is None or not _valid_group(order, roles):
        return None
    return TaskTopology(affine, anti, order)


def _relations(text: str, roles: set[str]) -> dict[str, frozenset[str]] | None:
    relations: dict[str, set[str]] = {}
    for raw in text.split(";"):
        group = [name.strip() for name in raw.split(",") if name.strip()]
        if not group:
            continue
        if not _valid_group(group, roles):
            return None
        if len(group) == 1:  # a group of one relates the task's own pods to each other
            relations.setdefault(group[0], set()).add(group[0])
            continue
        for name in group:
            relations.setdefault(name, set()).update(other for other in group if other != name)
    return {name: frozenset(others) for name, others in relations.items()}


def _valid_group(group: Iterable[str], roles: set[str]) -> bool:
    seen: set[str] = set()
    for name in group:
        if name not in roles or name in seen:
            return False
        seen.add(name)
    return True


class TopologyScores:
    """Node bonuses for tasks of gangs with a task topology; one per cycle."""

    def __init__(self, weight: float, topologies: Mapping[str, TaskTopology]) -> None:
        self._weight = weight
        self._topologies = topologies

    def of(self, gang: GangView) -> TaskTopology | None:
        return self._topologies.get(gang.uid)

    def applies(self, task: TaskView) -> bool:
        return task.gang.uid in self._topologies

    def bonus(self, task: TaskView) -> dict[int, float]:
        """node index -> score for placing `task` there, from where its gang's tasks are now."""
        topology = self._topologies[task.gang.uid]
        role = role_of(task.info)
        affine, anti = topology.affine.get(role, frozenset()), topology.anti.get(role, frozenset())
        if not affine and not anti:
            return {}
        scale = self._weight * MAX_SCORE / max(1, len(task.gang.tasks))
        bonus: dict[int, float] = {}
        for other in task.gang.tasks:
            if other is task or other.node < 0 or other.status in ("Releasing", "Succeeded", "Failed"):
                continue
            other_role = role_of(other.info)
            step = (other_role in affine) - (other_role in anti)
            if step:
                bonus[other.node] = bonus.get(other.node, 0.0) + step * scale
        return bonus


def topology_scores(gangs: Iterable[GangView], weight: float) -> TopologyScores:
    topologies = {}
    for gang in gangs:
        topology = read_topology(gang.info)
        if topology is not None:
            topologies[gang.uid] = topology
    return TopologyScores(weight, topologies)


def order_tasks(gang: GangView, topology: TaskTopology) -> None:
    """Task order with task-topology: task priority first, then the annotation's order."""
    gang.tasks.sort(key=lambda t: (t.order[0], topology.rank(role_of(t.info))))
