"""Pure: placing a gang with a network-topology constraint as a search over HyperNode domains.

allocate calls `allocate_in_domains` for a gang whose PodGroup has `networkTopology` or a
`subGroupPolicy` with one. The candidates are the HyperNodes of a tier no higher than the limit
that contain every node the gang already holds (so replacements of lost pods land inside the
gang's domain), lowest tier first and, within a tier, the fullest by HyperNode bin packing first;
those whose free capacity (kept per domain by `NetworkTopology`) cannot cover the gang's
remaining minimum are skipped without a trial. The gang's placement is tried inside each in turn
with every node outside it closed to the placer; the first that makes the gang ready (or
pipelined) is kept. Hard: nothing else is tried. Soft: after the last tier, the whole cluster.

Partitions (a task's `partitionPolicy`, the PodGroup's `subGroupPolicy`): inside the job's
domain, each partition is given a domain of its own, chosen the same way and checked by a
first-fit simulation of its pods on the domain's nodes; a partition that no domain can hold is
closed (hard) so its pods stay pending, and gang readiness decides whether the job may start.

When nothing fits, the gang's explanation names the blocker in a person's terms: the limit, how
many pods the job needs and how many the best domain could take.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from services.scheduler.core.context import CycleContext
from services.scheduler.core.hypernodes import Domain
from services.scheduler.core.network_topology import NetworkTopology
from services.scheduler.core.snapshot import ALLOCATED, BOUND, PENDING, PIPELINED, RUNNING
from services.scheduler.core.snapshot_topology import TopologyConstraint
from services.scheduler.core.state import GangView, TaskView
from services.scheduler.core.vectors import fits
from shared.volcano.keys import PARTITION_ID

HELD = frozenset({BOUND, RUNNING, ALLOCATED, PIPELINED})
TOPOLOGY_BLOCKED = "NetworkTopologyUnsatisfied"
Attempt = Callable[[], tuple[bool, bool]]  # (kept, more): one placement trial of the gang


def constrained(gang: GangView) -> bool:
    info = gang.info
    return info.network_topology is not None or any(g.topology is not None for g in info.sub_groups)


@dataclass(slots=True)
class _Partition:
    label: str
    role: str
    topology: TopologyConstraint | None
    tasks: list[TaskView] = field(default_factory=list)


def allocate_in_domains(
    ctx: CycleContext, topology: NetworkTopology, gang: GangView, attempt: Attempt
) -> bool:
    """Place `gang` inside the best domain that holds it; returns whether it wants another turn."""
    search = _Search(ctx, topology, gang)
    constraint = gang.info.network_topology
    candidates: list[Domain | None]
    if constraint is None:
        candidates = [None]
    else:
        limit = topology.domains.limit(constraint)
        if limit is None:
            if constraint.hard:
                return search.blocked(f'no HyperNode tier is named "{constraint.highest_tier_name}"')
            candidates = [None]
        else:
            found = search.ordered(limit, None, search.held(gang.tasks), search.gang_need())
            candidates = list(found)
            if not constraint.hard:
                candidates.append(None)
            elif not candidates:
                return search.blocked(search.explain_job(limit))
    for position, domain in enumerate(candidates):
        inside = domain.node_set if domain is not None else None
        allowed = search.partition_domains(inside)
        ctx.placer.restrict = _restriction(inside, allowed)
        before = gang.ready + gang.waiting
        try:
            kept, more = attempt()
        finally:
            ctx.placer.restrict = None
        # A gang already ready keeps an attempt that placed nothing; a wider domain may still
        # hold its remaining pods (another partition), so that is not yet the answer.
        progressed = gang.ready + gang.waiting > before or position == len(candidates) - 1
        if kept and progressed:
            gang.domain = domain.name if domain is not None else ""
            return more
    if search.partition_problems:
        return search.blocked(search.partition_problems[0])
    if constraint is not None and constraint.hard:
        limit = topology.domains.limit(constraint)
        assert limit is not None
        return search.blocked(search.explain_job(limit))
    return False


def _restriction(
    inside: frozenset[int] | None, allowed: dict[str, frozenset[int]]
) -> Callable[[TaskView], frozenset[int] | None]:
    def restrict(task: TaskView) -> frozenset[int] | None:
        return allowed.get(task.info.uid, inside)

    return restrict


class _Search:
    def __init__(self, ctx: CycleContext, topology: NetworkTopology, gang: GangView) -> None:
        self.ctx = ctx
        self.topology = topology
        self.gang = gang
        self.size = ctx.state.space.size
        self.partition_problems: list[str] = []

    # --- what the gang needs --------------------------------------------------------------
    @staticmethod
    def held(tasks: list[TaskView]) -> frozenset[int]:
        return frozenset(t.node for t in tasks if t.node >= 0 and t.status in HELD)

    def pending(self, tasks: list[TaskView]) -> list[TaskView]:
        return [t for t in tasks if t.status == PENDING and not t.best_effort]

    def gang_need(self) -> list[int]:
        """The summed request of the pending pods the gang still needs to reach its minimum."""
        gang = self.gang
        missing = max(0, gang.info.min_member - gang.ready - gang.waiting)
        return self._sum(self.pending(gang.tasks)[:missing])

    def _sum(self, tasks: list[TaskView]) -> list[int]:
        need = [0] * self.size
        for task in tasks:
            for i, amount in task.request:
                need[i] += amount
        return need

    # --- choosing domains -----------------------------------------------------------------
    def ordered(
        self, limit: int, inside: frozenset[int] | None, holding: frozenset[int], need: list[int]
    ) -> list[Domain]:
        """Domains of tier <= limit that can hold `need`: lowest tier, then fullest, first."""
        topology = self.topology
        found = [d for d in topology.domains.within(limit, inside, holding) if topology.holds(d, need)]
        found.sort(key=lambda d: (d.tier, -topology.score(d, need), d.name))
        return found

    def partition_domains(self, inside: frozenset[int] | None) -> dict[str, frozenset[int]]:
        """Task uid -> the nodes its partition may use, for the partitions with a constraint."""
        allowed: dict[str, frozenset[int]] = {}
        overlay: dict[int, list[int]] = {}
        self.partition_problems = []
        for part in self._partitions():
            if part.topology is None:
                continue
            limit = self.topology.domains.limit(part.topology)
            pending = self.pending(part.tasks)
            if not pending:
                continue
            chosen: frozenset[int] | None = None
            best: tuple[int, str] = (0, "")
            if limit is not None:
                for domain in self.ordered(limit, inside, self.held(part.tasks), self._sum(pending)):
                    placed = self.simulate(domain, pending, overlay)
                    if placed == len(pending):
                        self.simulate(domain, pending, overlay, keep=True)
                        chosen = domain.node_set
                        break
                    best = max(best, (placed, domain.name))
            if chosen is None:
                if part.topology.hard:
                    chosen = frozenset()
                    self.partition_problems.append(self._partition_problem(part, limit, len(pending), best))
                else:
                    chosen = inside
            if chosen is not None:
                for task in part.tasks:
                    allowed[task.info.uid] = chosen
        return allowed

    def _partitions(self) -> list[_Partition]:
        by_role = {g.name: g for g in self.gang.info.sub_groups}
        parts: dict[tuple[str, str], _Partition] = {}
        for task in self.gang.tasks:
            group = by_role.get(task.info.task_role)
            if group is None:
                continue
            label = task.info.labels.get(PARTITION_ID, "")
            key = (group.name, label)
            part = parts.get(key)
            if part is None:
                part = parts[key] = _Partition(label, group.name, group.topology)
            part.tasks.append(task)
        return [parts[key] for key in sorted(parts, key=lambda k: (k[0], _numeric(k[1])))]

    def simulate(
        self, domain: Domain, tasks: list[TaskView], overlay: dict[int, list[int]], *, keep: bool = False
    ) -> int:
        """How many of `tasks` fit first-fit on the domain's nodes (static filters included)."""
        state, placer = self.ctx.state, self.ctx.placer
        scratch = overlay if keep else {}
        placed = 0
        for task in tasks:
            allowed = placer.candidate_set(task)
            for node in domain.nodes:
                if node not in allowed:
                    continue
                idle = scratch.get(node) or overlay.get(node) or state.idle[node]
                if fits(task.request, idle):
                    idle = list(idle)
                    for i, amount in task.request:
                        idle[i] -= amount
                    scratch[node] = idle
                    placed += 1
                    break
        return placed

    # --- explaining -------------------------------------------------------------------------
    def blocked(self, message: str) -> bool:
        gang = self.gang
        if gang.block_reason is None:
            gang.block_reason = TOPOLOGY_BLOCKED
        gang.job_fit_error = gang.job_fit_error or message
        return False

    def explain_job(self, limit: int) -> str:
        gang = self.gang
        pending = self.pending(gang.tasks)
        missing = max(1, gang.info.min_member - gang.ready - gang.waiting)
        holding = self.held(gang.tasks)
        domains = self.topology.domains.within(limit, None, holding)
        where = f"HyperNode of tier {limit} or lower"
        if holding:
            where += f" containing the {len(holding)} node(s) the job already runs on"
        if not domains:
            return f"network topology: no {where} exists"
        best = max(((self.simulate(d, pending, {}), d) for d in domains), key=lambda x: (x[0], -x[1].tier))
        count, domain = best
        return (
            f"network topology: no {where} has room for the {missing} pod(s) the job needs; "
            f"the best, {domain.name} (tier {domain.tier}), has room for {count}"
        )

    def _partition_problem(
        self, part: _Partition, limit: int | None, count: int, best: tuple[int, str]
    ) -> str:
        if limit is None:
            assert part.topology is not None
            return f'network topology: no HyperNode tier is named "{part.topology.highest_tier_name}"'
        text = (
            f"network topology: no HyperNode of tier {limit} or lower has room for partition "
            f"{part.label or '0'} of task {part.role} ({count} pod(s))"
        )
        if best[1]:
            text += f"; the best, {best[1]}, has room for {best[0]}"
        return text


def _numeric(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (1 << 30, label)
