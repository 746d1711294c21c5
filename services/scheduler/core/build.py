"""From `Snapshot` to the cycle's working state: the first step of `plan_cycle`.

Keeps Ready nodes only (sorted by name, so "first fit" and ties are deterministic), books every
task that holds a node and every foreign pod against its node, charges queues (and their
ancestors) with their gangs' allocations, re-applies last cycle's nominations as reservations,
runs gang's validity check, and computes proportion's or capacity's deserved shares.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.scheduler.core import fairshare, fairshare_deserved
from services.scheduler.core.actions.domain_search import constrained
from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.context import CycleContext
from services.scheduler.core.device_quota import apply_mappings, renames
from services.scheduler.core.disruption import DisruptionGuard
from services.scheduler.core.fairness import (
    QueueRules,
    cluster_total,
    cluster_usage,
    compute_deserved,
)
from services.scheduler.core.gates import gate_problem, gated_waiting
from services.scheduler.core.hdrf import HierarchyShares
from services.scheduler.core.hypernodes import resolve_domains
from services.scheduler.core.network_topology import NetworkTopology
from services.scheduler.core.network_topology import weights_of as network_weights_of
from services.scheduler.core.node_base import NodeBase
from services.scheduler.core.ordering import task_order
from services.scheduler.core.placement import Placer
from services.scheduler.core.predicates import PredicateOptions, anti_affinity_terms
from services.scheduler.core.preemption_cost import PLUGIN, PastEviction, PreemptionRun, args_of, budget_left
from services.scheduler.core.scoring import weights_from_conf
from services.scheduler.core.settled import lean_applies
from services.scheduler.core.snapshot import (
    BOUND,
    FAILED,
    PENDING,
    PIPELINED,
    RELEASING,
    RUNNING,
    SUCCEEDED,
    GangInfo,
    SettledGangs,
    Snapshot,
)
from services.scheduler.core.state import (
    QUEUE_ALLOCATED_STATUSES,
    VALID_STATUSES,
    CycleState,
    GangView,
    QueueView,
    TaskView,
    initial_count,
)
from services.scheduler.core.topology import order_tasks, topology_scores
from services.scheduler.core.unschedulable_wording import NOT_ENOUGH_PODS_OF_TASK, NOT_ENOUGH_TASKS
from services.scheduler.core.vectors import UNLIMITED, ResourceSpace, add_into, fits_with
from shared.volcano.queue_access import QUEUE_FORBIDS_NAMESPACE, allowed_namespaces, refusal

_KNOWN_STATUSES = frozenset({PENDING, BOUND, RUNNING, RELEASING, SUCCEEDED, FAILED})


def build_context(
    snapshot: Snapshot, conf: SchedulerConf, kept: NodeBase | None = None
) -> tuple[CycleContext, set[str]]:
    """The cycle's context, and the uids of tasks whose carried nomination was re-applied.
    `kept`: the last cycle's node base, reused when made of the same nodes (state.NodeBase)."""
    renamed = renames(conf.device_class_mappings())
    snapshot = apply_mappings(snapshot, renamed)  # DRA classes' quota names
    walked, settled = _walked(snapshot, conf, lean=not renamed)
    space = ResourceSpace(_resource_names(snapshot, walked, settled))
    node_base = NodeBase.kept_or_new(kept, space, snapshot.nodes)
    # What the settled gangs hold per node, taken off once per changed node (NodeBase.idle_after).
    idle = node_base.idle_after(settled.occupied, space.index) if settled is not None else None
    state = CycleState(space, snapshot.nodes, node_base, idle)
    state.devices_taken.update(snapshot.devices_taken)
    _build_queues(state, snapshot)
    if settled is not None:
        _book_settled(state, settled)
    for pod in snapshot.other_pods:
        node = state.node_index.get(pod.node)
        if node is not None:
            for name, amount in pod.request.items():
                state.idle[node][space.index[name]] -= amount
            state.other_labels[node].append((pod.namespace, dict(pod.labels)))
            state.other_ports[node].extend(pod.host_ports)
            if pod.anti_affinity:
                state.other_anti[node].append((pod.namespace, pod.anti_affinity))
                state.anti_affinity_pods += 1
    # Keyed by identity: hashing a Resources costs more than converting it; gangs share objects.
    sparse_cache: dict[int, tuple[tuple[int, int], ...]] = {}
    gated_gangs: dict[str, tuple[str, str]] = {}
    for info in sorted(walked, key=lambda g: g.uid):
        queue = state.queues.get(info.queue)
        gang = GangView(info=info, queue=queue, phase=info.phase or "Pending")
        gang.alloc = [0] * space.size
        gated = gated_waiting(info.tasks)
        for order, task_info in sorted((task_order(t), t) for t in info.tasks if t.uid not in gated):
            request = sparse_cache.get(id(task_info.request))
            if request is None:
                request = sparse_cache[id(task_info.request)] = space.sparse(task_info.request)
            status = task_info.status if task_info.status in _KNOWN_STATUSES else BOUND
            task = TaskView(
                info=task_info,
                gang=gang,
                request=request,
                best_effort=all(space.names[i] == "pods" for i, _ in request),
                order=order,
                status=status,
                has_anti_affinity=bool(anti_affinity_terms(task_info.affinity)),
            )
            gang.tasks.append(task)
            initial_count(gang, task)
            node = state.node_index.get(task_info.node or "")
            if status in (BOUND, RUNNING, RELEASING) and node is not None:
                task.node = node
                state.occupy(task, node)
            if status in QUEUE_ALLOCATED_STATUSES and queue is not None:
                for level in (queue, *queue.ancestors):
                    add_into(level.alloc, request)
                add_into(gang.alloc, request)
        if gated and (problem := gate_problem(info, len(gang.tasks), len(gated))) is not None:
            gated_gangs[info.uid] = problem
            gang.phase = "Pending"  # an admitted gang held back by its gates holds no room either
        if queue is not None:
            queue.has_gangs = True
            for task in gang.tasks:
                if task.status in (PENDING, *QUEUE_ALLOCATED_STATUSES):
                    add_into(queue.request, task.request)
        state.gangs.append(gang)
    _add_elastic(state)
    carried = _reapply_nominations(state)
    weights = None  # proportion's own; fairshare's usage over time may shape them
    if conf.enabled(fairshare.PLUGIN):
        shares = fairshare.current_shares(state, cluster_total(state))
        seconds = fairshare.half_life(conf).total_seconds()
        state.queue_usage = fairshare.advance(snapshot.queue_usage, snapshot.now, seconds, shares)
        state.fair_keys = fairshare.fair_keys(state.queues, state.queue_usage.usage)
        if fairshare_deserved.enabled(conf):
            base = {name: float(q.info.weight) for name, q in state.queues.items()}
            weights = fairshare_deserved.weights(base, state.fair_keys, fairshare_deserved.bound(conf))
    compute_deserved(state, conf, weights)
    if conf.enabled("drf", "enableHierarchy"):
        state.hierarchy = HierarchyShares(state, cluster_total(state))
    predicates = conf.plugin("predicates")
    options = PredicateOptions(
        enabled=predicates is not None and predicates.enabled("enablePredicate"),
        node_affinity=_flag(conf, "predicate.NodeAffinityEnable"),
        taint_toleration=_flag(conf, "predicate.TaintTolerationEnable"),
        pod_affinity=_flag(conf, "predicate.PodAffinityEnable"),
        node_ports=_flag(conf, "predicate.NodePortsEnable"),
        topology_spread=_flag(conf, "predicate.PodTopologySpreadEnable"),
    )
    topology = None
    if conf.enabled("task-topology"):
        topology = topology_scores(state.gangs, conf.argument("task-topology", "task-topology.weight", 1))
        if conf.enabled("task-topology", "enableTaskOrder"):
            for gang in state.gangs:
                found = topology.of(gang)
                if found is not None:
                    order_tasks(gang, found)
        if not conf.enabled("task-topology", "enableNodeOrder"):
            topology = None
    placer = Placer(state, weights_from_conf(conf), options, topology)
    ctx = CycleContext(
        state=state,
        conf=conf,
        placer=placer,
        total=cluster_total(state),
        cluster=cluster_usage(state, conf),
        rules=QueueRules.of(conf),
        now=snapshot.now,
        disruption=DisruptionGuard(snapshot.budgets, (t for g in state.gangs for t in g.tasks), conf),
        unjoined=snapshot.unjoined,
    )
    ctx.preemption = preemption_run(snapshot, conf, state)
    if conf.enabled("gang"):
        for gang in state.gangs:
            problem = _invalid(gang)
            if problem is not None:
                ctx.invalid[gang.uid] = problem
    ctx.invalid.update(gated_gangs)
    if snapshot.hyper_nodes:
        _add_network_topology(ctx, snapshot)
    for gang in state.gangs:
        refused = _namespace_refused(gang)
        if refused is not None:
            ctx.invalid[gang.uid] = (QUEUE_FORBIDS_NAMESPACE, refused)
    return ctx, carried


def preemption_run(snapshot: Snapshot, conf: SchedulerConf, state: CycleState) -> PreemptionRun | None:
    """preemptioncost's arguments and budgets left for this cycle, or None when not configured."""
    option = conf.plugin(PLUGIN)
    if option is None:
        return None
    args = args_of(option.arguments)
    running: dict[str, int] = {}
    for gang in state.gangs:
        if gang.queue is not None:
            count = sum(1 for t in gang.tasks if t.status in (BOUND, RUNNING))
            running[gang.queue.info.name] = running.get(gang.queue.info.name, 0) + count
    history = [PastEviction(queue=q, at=at) for q, at in snapshot.recent_evictions]
    return PreemptionRun(args=args, left=budget_left(history, snapshot.now, args, running))


def _add_network_topology(ctx: CycleContext, snapshot: Snapshot) -> None:
    """HyperNodes resolved to node sets once per cycle, with usage kept per domain."""
    state = ctx.state
    domains = resolve_domains(
        snapshot.hyper_nodes, [n.name for n in state.nodes], [n.labels for n in state.nodes]
    )
    topology = ctx.topology = NetworkTopology(state, domains, network_weights_of(ctx.conf))
    if topology.weights.enabled and topology.weights.normal_pods:
        ctx.placer.node_bonus = lambda task: topology.normal_pod_bonus(task.request)
        ctx.placer.bonus_applies = lambda task: not constrained(task.gang)


def _namespace_refused(gang: GangView) -> str | None:
    """Work that got past admission into a queue its namespace may not use (admission was
    bypassed, or the queue's allowed namespaces changed later) is never enqueued nor placed."""
    if gang.queue is None:
        return None
    allowed = allowed_namespaces(gang.queue.info.annotations)
    return refusal(gang.queue.name, allowed, gang.info.namespace)


def _walked(
    snapshot: Snapshot, conf: SchedulerConf, *, lean: bool
) -> tuple[list[GangInfo], SettledGangs | None]:
    """The gangs to build views of, and the settled sums that stand in for the others (None:
    every gang is walked; core/settled.py says when the sums may be used)."""
    settled = snapshot.settled
    if settled is None or not settled.uids or not lean:
        return list(snapshot.gangs), None
    walked = [g for g in snapshot.gangs if g.uid not in settled.uids]
    if not lean_applies(conf, walked, hyper_nodes=bool(snapshot.hyper_nodes)):
        return list(snapshot.gangs), None
    return walked, settled


def _book_settled(state: CycleState, settled: SettledGangs) -> None:
    """What the settled gangs charge their queues, booked as build_context books each task of a
    walked gang (what they hold per node is already off the nodes' idle: NodeBase.idle_after)."""
    index = state.space.index
    for queue in state.queues.values():
        if queue.name in settled.queues:
            queue.has_gangs = True
        for level in (queue, *queue.ancestors):
            _add_amounts(level.alloc, settled.alloc.get(queue.name), index)
        _add_amounts(queue.request, settled.request.get(queue.name), index)
        _add_amounts(queue.elastic, settled.elastic.get(queue.name), index)
    for inqueue in settled.inqueue.values():
        _add_amounts(state.settled_inqueue, inqueue, index)


def _add_amounts(vector: list[int], amounts: Mapping[str, int] | None, index: Mapping[str, int]) -> None:
    for name, amount in (amounts or {}).items():
        vector[index[name]] += amount


def _resource_names(snapshot: Snapshot, walked: list[GangInfo], settled: SettledGangs | None) -> set[str]:
    names: set[str] = set(settled.names) if settled is not None else set()
    for node in snapshot.nodes:
        names.update(node.allocatable)
    for queue in snapshot.queues:
        for vector in (queue.capability, queue.guarantee, queue.deserved):
            names.update(vector or ())
    for gang in walked:
        names.update(gang.min_resources or ())
        for task in gang.tasks:
            names.update(task.request)
    for pod in snapshot.other_pods:
        names.update(pod.request)
    return names


def _build_queues(state: CycleState, snapshot: Snapshot) -> None:
    space = state.space
    for info in sorted(snapshot.queues, key=lambda q: q.name):
        state.queues[info.name] = QueueView(
            info=info,
            alloc=[0] * space.size,
            capability=space.dense(info.capability, UNLIMITED)
            if info.capability is not None
            else [UNLIMITED] * space.size,
            guarantee=space.dense(info.guarantee),
            request=[0] * space.size,
            inqueue=[0] * space.size,
            elastic=[0] * space.size,
        )
    for queue in state.queues.values():
        seen = {queue.name}
        parent = queue.info.parent or ("root" if queue.name != "root" else None)
        while parent is not None and parent in state.queues and parent not in seen:
            ancestor = state.queues[parent]
            queue.ancestors.append(ancestor)
            seen.add(parent)
            parent = ancestor.info.parent or ("root" if parent != "root" else None)


def _add_elastic(state: CycleState) -> None:
    for gang in state.gangs:
        if gang.queue is None or gang.info.min_resources is None:
            continue
        minimum = state.space.dense(gang.info.min_resources)
        for i, amount in enumerate(gang.alloc):
            gang.queue.elastic[i] += max(0, amount - minimum[i])


def _reapply_nominations(state: CycleState) -> set[str]:
    """Reserve last cycle's nominated nodes for their tasks, while the room is still coming."""
    carried: set[str] = set()
    for gang in state.gangs:
        for task in gang.tasks:
            node = state.node_index.get(task.info.nominated_node or "")
            if task.status != PENDING or node is None or gang.queue is None:
                continue
            if fits_with(task.request, state.idle[node], state.releasing[node]):
                state.assign(task, node, PIPELINED)
                carried.add(task.info.uid)
    return carried


def _invalid(gang: GangView) -> tuple[str, str] | None:
    """gang's JobValid: enough valid tasks overall and per task role, else Volcano's message."""
    if not gang.tasks:
        return None
    if gang.role_minimums_apply():
        for role, minimum in gang.info.min_task_member.items():
            valid = sum(1 for t in gang.tasks if t.info.task_role == role and t.status in VALID_STATUSES)
            if valid < minimum:
                return (
                    NOT_ENOUGH_PODS_OF_TASK,
                    "Not enough valid pods of each task for gang-scheduling",
                )
    valid = sum(1 for t in gang.tasks if t.status in VALID_STATUSES)
    if valid < gang.info.min_member:
        return (
            NOT_ENOUGH_TASKS,
            f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {gang.info.min_member}",
        )
    return None


def _flag(conf: SchedulerConf, key: str) -> bool:
    option = conf.plugin("predicates")
    if option is None or key not in option.arguments:
        return True
    return str(option.arguments[key]).lower() not in ("false", "0")
