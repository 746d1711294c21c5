"""A stand-in for the KubeRay operator running with `batch-scheduler=volcano` (ray.io/v1 RayCluster).

What the real operator does for a RayCluster when its batch scheduler is Volcano, in the part
the scheduler and the user see:

- one PodGroup `ray-<cluster>-pg`, controlled by the RayCluster: minMember is 1 (the head) plus
  every worker group's desired replicas (replicas held within minReplicas..maxReplicas, times
  numOfHosts; a suspended group counts none), or their minReplicas when in-tree autoscaling is
  on; minResources sums the same pods' requests; queue from the RayCluster's label
  `volcano.sh/queue-name`, priority class from its label `ray.io/priority-class-name`. A later
  change of size or resources updates the PodGroup;
- the head pod and each group's workers (generated names `<cluster>-head-` and
  `<cluster>-<group>-worker-`), with KubeRay's labels, `schedulerName: volcano`, the
  annotations `scheduling.k8s.io/group-name` and `volcano.sh/task-spec` (the group's name), the
  queue label and the priority class; a finished or deleted pod is replaced;
- the head Service `<cluster>-head-svc`;
- status: desired/ready/available worker counts, desired CPU, memory and GPU, the head pod, and
  `state: ready` once every pod runs.

Autoscaling itself, RayJob and RayService are not simulated (docs/simulator.md).
"""

from __future__ import annotations

from typing import Any

from services.simulator.control.standin import Obj, Plan, View, controller_ref, template_requests
from services.simulator.kubelets import pod_status
from services.simulator.store.api_resources import BY_PATH, PODGROUPS, PODS, SERVICES
from services.simulator.store.store import clone
from shared.domain.resources import Resources
from shared.volcano.keys import GROUP_NAME, TASK_SPEC
from shared.volcano.keys import QUEUE_NAME as QUEUE_LABEL

RAYCLUSTERS = BY_PATH[("ray.io", "v1", "rayclusters")]

PRIORITY_LABEL = "ray.io/priority-class-name"
HEAD_GROUP = "headgroup"


def podgroup_name(cluster: Obj) -> str:
    return f"ray-{cluster['metadata']['name']}-pg"


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def desired_workers(group: Obj, autoscaling: bool) -> int:
    """A worker group's pod count as KubeRay sizes the gang: replicas within min..max, times hosts."""
    if group.get("suspend"):
        return 0
    low = _int(group.get("minReplicas"), 0)
    high = _int(group.get("maxReplicas"), 2**31 - 1)
    replicas = low if autoscaling else min(max(_int(group.get("replicas"), low), low), high)
    return replicas * _int(group.get("numOfHosts"), 1)


def gang_size(cluster: Obj) -> tuple[int, Resources]:
    """(minMember, minResources) of the cluster's PodGroup."""
    spec = cluster.get("spec") or {}
    autoscaling = bool(spec.get("enableInTreeAutoscaling"))
    head = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec")
    members, total = 1, template_requests(head)
    for group in spec.get("workerGroupSpecs") or ():
        count = desired_workers(group, autoscaling)
        members += count
        total = total + template_requests((group.get("template") or {}).get("spec")) * count
    return members, total


class RayClusterOperator:
    owner_kinds = (RAYCLUSTERS,)
    child_kinds = (PODS, PODGROUPS, SERVICES)

    def plan(self, cluster: Obj, view: View) -> Plan:
        plan = Plan()
        meta, spec = cluster["metadata"], cluster.get("spec") or {}
        namespace, labels = meta["namespace"], meta.get("labels") or {}
        self._sync_podgroup(cluster, view, plan)
        if view.find(SERVICES, namespace, f"{meta['name']}-head-svc") is None:
            plan.creates.append((SERVICES, self._head_service(cluster)))
        pods = view.owned(PODS, cluster)
        for pod in pods:
            if pod_status.is_terminal(pod) and not pod["metadata"].get("deletionTimestamp"):
                plan.deletes.append((PODS, namespace, pod["metadata"]["name"]))
        live = [
            p for p in pods if not pod_status.is_terminal(p) and not p["metadata"].get("deletionTimestamp")
        ]
        autoscaling = bool(spec.get("enableInTreeAutoscaling"))
        groups: list[tuple[str, int, Obj]] = [(HEAD_GROUP, 1, spec.get("headGroupSpec") or {})]
        groups += [
            (g.get("groupName", ""), desired_workers(g, autoscaling), g)
            for g in spec.get("workerGroupSpecs") or ()
        ]
        for group_name, wanted, group in groups:
            have = [p for p in live if (p["metadata"].get("labels") or {}).get("ray.io/group") == group_name]
            for _ in range(wanted - len(have)):
                plan.creates.append((PODS, self._pod(cluster, group_name, group, labels)))
            surplus = have[wanted:] if len(have) > wanted else []
            plan.deletes += [(PODS, namespace, p["metadata"]["name"]) for p in surplus]
        plan.status = self._status(cluster, live, groups)
        return plan

    @staticmethod
    def _sync_podgroup(cluster: Obj, view: View, plan: Plan) -> None:
        meta, labels = cluster["metadata"], cluster["metadata"].get("labels") or {}
        members, resources = gang_size(cluster)
        min_resources = resources.to_quantities()
        existing = view.find(PODGROUPS, meta["namespace"], podgroup_name(cluster))
        if existing is None:
            pg_spec: Obj = {"minMember": members, "minResources": min_resources}
            if QUEUE_LABEL in labels:
                pg_spec["queue"] = labels[QUEUE_LABEL]
            if PRIORITY_LABEL in labels:
                pg_spec["priorityClassName"] = labels[PRIORITY_LABEL]
            plan.creates.append(
                (
                    PODGROUPS,
                    {
                        "apiVersion": "scheduling.volcano.sh/v1beta1",
                        "kind": "PodGroup",
                        "metadata": {
                            "name": podgroup_name(cluster),
                            "namespace": meta["namespace"],
                            "ownerReferences": [controller_ref(cluster)],
                        },
                        "spec": pg_spec,
                        "status": {"phase": "Pending"},
                    },
                )
            )
            return
        held = existing.get("spec") or {}
        same_resources = Resources.parse(held.get("minResources")) == resources
        if held.get("minMember") != members or not same_resources:
            changed = clone(existing)
            changed["spec"]["minMember"] = members
            changed["spec"]["minResources"] = min_resources
            plan.updates.append((PODGROUPS, changed))

    @staticmethod
    def _pod(cluster: Obj, group_name: str, group: Obj, cluster_labels: dict[str, str]) -> Obj:
        name = cluster["metadata"]["name"]
        template = clone(group.get("template") or {})
        template_meta = template.get("metadata") or {}
        head = group_name == HEAD_GROUP
        node_type = "head" if head else "worker"
        labels = {
            **(template_meta.get("labels") or {}),
            "ray.io/cluster": name,
            "ray.io/group": group_name,
            "ray.io/node-type": node_type,
            "ray.io/identifier": f"{name}-{node_type}",
            "ray.io/is-ray-node": "yes",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        }
        pod_spec = template.get("spec") or {}
        if QUEUE_LABEL in cluster_labels:
            labels[QUEUE_LABEL] = cluster_labels[QUEUE_LABEL]
        if PRIORITY_LABEL in cluster_labels:
            pod_spec["priorityClassName"] = cluster_labels[PRIORITY_LABEL]
        pod_spec["schedulerName"] = "volcano"
        annotations = {
            **(template_meta.get("annotations") or {}),
            GROUP_NAME: podgroup_name(cluster),
            TASK_SPEC: group_name,
        }
        prefix = f"{name}-head-" if head else f"{name}-{group_name}-worker-"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": prefix,
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [controller_ref(cluster)],
            },
            "spec": pod_spec,
        }

    @staticmethod
    def _head_service(cluster: Obj) -> Obj:
        name = cluster["metadata"]["name"]
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{name}-head-svc",
                "labels": {"ray.io/cluster": name, "ray.io/node-type": "head"},
                "ownerReferences": [controller_ref(cluster)],
            },
            "spec": {
                "selector": {"ray.io/cluster": name, "ray.io/node-type": "head"},
                "ports": [
                    {"name": "gcs-server", "port": 6379},
                    {"name": "dashboard", "port": 8265},
                    {"name": "client", "port": 10001},
                ],
            },
        }

    @staticmethod
    def _status(cluster: Obj, live: list[Obj], groups: list[tuple[str, int, Obj]]) -> Obj:
        spec = cluster.get("spec") or {}
        running = [p for p in live if (p.get("status") or {}).get("phase") == "Running"]
        workers = [
            p for p in running if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "worker"
        ]
        heads = [p for p in live if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head"]
        desired_workers_total = sum(w for g, w, _ in groups if g != HEAD_GROUP)
        _, resources = gang_size(cluster)
        worker_groups = spec.get("workerGroupSpecs") or ()
        status: Obj = dict(cluster.get("status") or {})
        status.update(
            {
                "desiredWorkerReplicas": desired_workers_total,
                "readyWorkerReplicas": len(workers),
                "availableWorkerReplicas": len(workers),
                "minWorkerReplicas": sum(
                    _int(g.get("minReplicas"), 0) * _int(g.get("numOfHosts"), 1) for g in worker_groups
                ),
                "maxWorkerReplicas": sum(
                    _int(g.get("maxReplicas"), 0) * _int(g.get("numOfHosts"), 1) for g in worker_groups
                ),
                "desiredCPU": resources.to_quantities().get("cpu", "0"),
                "desiredMemory": resources.to_quantities().get("memory", "0"),
                "desiredGPU": resources.to_quantities().get("nvidia.com/gpu", "0"),
                "observedGeneration": cluster["metadata"].get("generation", 1),
            }
        )
        if heads:
            head = heads[0]
            status["head"] = {
                "podName": head["metadata"]["name"],
                "podIP": (head.get("status") or {}).get("podIP", ""),
            }
        all_running = len(running) == len(live) == desired_workers_total + 1
        if all_running:
            status["state"] = "ready"
        return status
