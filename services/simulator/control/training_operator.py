"""A stand-in for Kubeflow's training operator with `--gang-scheduler-name=volcano` (kubeflow.org/v1
PyTorchJob, TFJob and MPIJob).

What the real operator does for such a job when its gang scheduler is Volcano, in the part the
scheduler and the user see:

- one PodGroup named after the job, controlled by it: minMember from
  `runPolicy.schedulingPolicy.minAvailable`, else every replica; queue from
  `schedulingPolicy.queue`, else the PodGroup's own, else `default`; priority class from
  `schedulingPolicy.priorityClass`; minResources from `schedulingPolicy.minResources`, else the
  requests of the first minMember pods with replica types taken in the order of their
  templates' priority (highest first);
- no pod until that PodGroup has left Pending (the operator waits for Volcano to enqueue it);
- pods `<job>-<replica type>-<index>` with the operator's labels, `schedulerName: volcano` unless
  the template names one, the annotations `scheduling.k8s.io/group-name` (the job) and
  `volcano.sh/task-spec` (the replica type), the framework's environment (PyTorch's
  MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK, TensorFlow's TF_CONFIG) and a headless Service each
  (PyTorch and TensorFlow);
- status: Created, Running, then Succeeded or Failed conditions and per-type replica counts; a
  finished job's PodGroup is deleted and its pods kept (cleanPodPolicy None, the default).

Elastic PyTorch, suspension, backoff limits and TTLs are not simulated (docs/simulator.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from services.simulator.control.standin import Obj, Plan, View, controller_ref, template_requests
from services.simulator.store.api_resources import BY_PATH, PODGROUPS, PODS, SERVICES
from services.simulator.store.store import clone
from shared.domain.resources import Resources
from shared.volcano.keys import GROUP_NAME, TASK_SPEC

PRIORITY_CLASSES = BY_PATH[("scheduling.k8s.io", "v1", "priorityclasses")]
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


@dataclass(frozen=True)
class Framework:
    kind: str
    replica_specs: str  # the spec field holding the replica types
    container: str  # the container the operator configures
    port_name: str
    default_port: int
    leaders: tuple[str, ...]  # replica types whose success ends the job
    services: bool

    @property
    def operator_name(self) -> str:
        return f"{self.kind.lower()}-controller"


FRAMEWORKS = {
    "PyTorchJob": Framework(
        "PyTorchJob", "pytorchReplicaSpecs", "pytorch", "pytorchjob-port", 23456, ("Master",), True
    ),
    "TFJob": Framework(
        "TFJob", "tfReplicaSpecs", "tensorflow", "tfjob-port", 2222, ("Chief", "Master"), True
    ),
    "MPIJob": Framework("MPIJob", "mpiReplicaSpecs", "mpi", "mpijob-port", 9999, ("Launcher",), False),
}


def _replicas(spec: Obj) -> int:
    value = spec.get("replicas")
    return 1 if value is None else int(value)


def _scheduling_policy(job: Obj) -> Obj:
    return ((job.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy") or {}


def min_resources(min_member: int, replica_specs: Obj, priority_of: dict[str, int]) -> Resources:
    """The requests of the first `min_member` pods, replica types by their templates' priority."""
    ranked = sorted(
        replica_specs.values(),
        key=lambda s: (
            -priority_of.get(((s.get("template") or {}).get("spec") or {}).get("priorityClassName") or "", 0)
        ),
    )
    total, counted = Resources(), 0
    for spec in ranked:
        for _ in range(_replicas(spec)):
            if counted >= min_member:
                return total
            counted += 1
            total = total + template_requests((spec.get("template") or {}).get("spec"))
    return total


class TrainingOperator:
    owner_kinds = tuple(BY_PATH[("kubeflow.org", "v1", k.lower() + "s")] for k in FRAMEWORKS)
    child_kinds = (PODS, PODGROUPS, SERVICES)

    def plan(self, job: Obj, view: View) -> Plan:
        framework = FRAMEWORKS[job["kind"]]
        plan = Plan()
        meta = job["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        replica_specs: Obj = (job.get("spec") or {}).get(framework.replica_specs) or {}
        pods = view.owned(PODS, job)
        status = clone(job.get("status") or {})
        conditions: list[Obj] = status.get("conditions") or []
        finished = any(
            c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True" for c in conditions
        )
        podgroup = view.find(PODGROUPS, namespace, name)
        if finished:
            if podgroup is not None:
                plan.deletes.append((PODGROUPS, namespace, name))
            status["replicaStatuses"] = self._replica_statuses(replica_specs, pods)
            plan.status = status
            return plan
        if not conditions:
            conditions = [
                _condition(
                    "Created", f"{framework.kind}Created", f"{framework.kind} {name} is created.", view.now()
                )
            ]
        self._sync_podgroup(job, replica_specs, podgroup, view, plan)
        phase = ((podgroup or {}).get("status") or {}).get("phase") or ""
        if podgroup is not None and phase not in ("", "Pending"):
            self._sync_pods(job, framework, replica_specs, pods, plan)
        statuses = self._replica_statuses(replica_specs, pods)
        running_by_type = {
            r: sum(
                1
                for p in pods
                if _replica_type(p) == r.lower() and (p.get("status") or {}).get("phase") == "Running"
            )
            for r in replica_specs
        }
        conditions = self._conditions(
            job, framework, replica_specs, statuses, running_by_type, conditions, view.now()
        )
        status["conditions"] = conditions
        status["replicaStatuses"] = statuses
        if any(c["type"] == "Running" for c in conditions) and "startTime" not in status:
            status["startTime"] = _now_of(conditions, "Running")
        done = next((c for c in conditions if c["type"] in ("Succeeded", "Failed")), None)
        if done is not None:
            status["completionTime"] = done["lastTransitionTime"]
        plan.status = status
        return plan

    # -- the PodGroup ------------------------------------------------------------------------

    @staticmethod
    def _sync_podgroup(job: Obj, replica_specs: Obj, existing: Obj | None, view: View, plan: Plan) -> None:
        policy = _scheduling_policy(job)
        total = sum(_replicas(s) for s in replica_specs.values())
        min_member = int(policy["minAvailable"]) if policy.get("minAvailable") is not None else total
        queue = policy.get("queue") or ((existing or {}).get("spec") or {}).get("queue") or "default"
        if policy.get("minResources") is not None:
            resources = dict(policy["minResources"])
        else:
            priority_of: dict[str, int] = {}
            for spec in replica_specs.values():
                class_name = ((spec.get("template") or {}).get("spec") or {}).get("priorityClassName")
                found = view.find(PRIORITY_CLASSES, "", class_name) if class_name else None
                if class_name and found is not None:
                    priority_of[class_name] = int(found.get("value") or 0)
            resources = min_resources(min_member, replica_specs, priority_of).to_quantities()
        wanted: Obj = {"minMember": min_member, "queue": queue, "minResources": resources}
        if policy.get("priorityClass"):
            wanted["priorityClassName"] = policy["priorityClass"]
        meta = job["metadata"]
        if existing is None:
            plan.creates.append(
                (
                    PODGROUPS,
                    {
                        "apiVersion": "scheduling.volcano.sh/v1beta1",
                        "kind": "PodGroup",
                        "metadata": {
                            "name": meta["name"],
                            "namespace": meta["namespace"],
                            "ownerReferences": [controller_ref(job)],
                        },
                        "spec": wanted,
                    },
                )
            )
            return
        held = existing.get("spec") or {}
        if any(held.get(k) != v for k, v in wanted.items() if k != "minResources") or Resources.parse(
            held.get("minResources")
        ) != Resources.parse(resources):
            changed = clone(existing)
            changed["spec"] = {**held, **wanted}
            plan.updates.append((PODGROUPS, changed))

    # -- pods and services -------------------------------------------------------------------

    def _sync_pods(
        self, job: Obj, framework: Framework, replica_specs: Obj, pods: list[Obj], plan: Plan
    ) -> None:
        name = job["metadata"]["name"]
        present = {p["metadata"]["name"] for p in pods}
        for rtype, spec in replica_specs.items():
            for index in range(_replicas(spec)):
                pod_name = f"{name}-{rtype.lower()}-{index}"
                if pod_name not in present:
                    plan.creates.append((PODS, self._pod(job, framework, replica_specs, rtype, index)))
                if framework.services and pod_name not in present:
                    plan.creates.append((SERVICES, self._service(job, framework, rtype, index, spec)))

    @staticmethod
    def _pod(job: Obj, framework: Framework, replica_specs: Obj, rtype: str, index: int) -> Obj:
        name = job["metadata"]["name"]
        spec = replica_specs[rtype]
        template = clone(spec.get("template") or {})
        template_meta = template.get("metadata") or {}
        labels = {
            **(template_meta.get("labels") or {}),
            **_selector(framework, name, rtype, index),
        }
        if rtype in framework.leaders:
            labels["training.kubeflow.org/job-role"] = "master"
        pod_spec = template.get("spec") or {}
        pod_spec.setdefault("schedulerName", "volcano")
        if not pod_spec.get("schedulerName"):
            pod_spec["schedulerName"] = "volcano"
        restart = spec.get("restartPolicy") or ("OnFailure" if framework.kind == "PyTorchJob" else "Never")
        pod_spec["restartPolicy"] = "Never" if restart == "ExitCode" else restart
        env = _framework_env(job, framework, replica_specs, rtype, index)
        for container in pod_spec.get("containers") or ():
            if container.get("name") == framework.container:
                names = {e.get("name") for e in container.get("env") or ()}
                container["env"] = [
                    *(container.get("env") or ()),
                    *(e for e in env if e["name"] not in names),
                ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{rtype.lower()}-{index}",
                "labels": labels,
                "annotations": {
                    **(template_meta.get("annotations") or {}),
                    GROUP_NAME: name,
                    TASK_SPEC: rtype.lower(),
                },
                "ownerReferences": [controller_ref(job)],
            },
            "spec": pod_spec,
        }

    @staticmethod
    def _service(job: Obj, framework: Framework, rtype: str, index: int, spec: Obj) -> Obj:
        name = job["metadata"]["name"]
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{name}-{rtype.lower()}-{index}",
                "labels": _selector(framework, name, rtype, index),
                "ownerReferences": [controller_ref(job)],
            },
            "spec": {
                "clusterIP": "None",
                "selector": _selector(framework, name, rtype, index),
                "ports": [{"name": framework.port_name, "port": _port(framework, spec)}],
            },
        }

    # -- status ------------------------------------------------------------------------------

    @staticmethod
    def _replica_statuses(replica_specs: Obj, pods: list[Obj]) -> Obj:
        statuses: Obj = {}
        for rtype in replica_specs:
            mine = [p for p in pods if _replica_type(p) == rtype.lower()]
            phases = [(p.get("status") or {}).get("phase") for p in mine]
            counts = {
                "active": sum(1 for ph in phases if ph in ("Pending", "Running")),
                "succeeded": phases.count("Succeeded"),
                "failed": phases.count("Failed"),
            }
            statuses[rtype] = {k: v for k, v in counts.items() if v}
        return statuses

    @staticmethod
    def _conditions(
        job: Obj,
        framework: Framework,
        replica_specs: Obj,
        statuses: Obj,
        running_by_type: dict[str, int],
        conditions: list[Obj],
        now: str,
    ) -> list[Obj]:
        name, namespace, kind = job["metadata"]["name"], job["metadata"]["namespace"], framework.kind
        leaders = [r for r in replica_specs if r in framework.leaders]
        deciders = leaders or [r for r in replica_specs if r == "Worker"] or list(replica_specs)
        # The operator calls a job running once its leader (or, without one, every worker) runs.
        running = all(
            running_by_type.get(r, 0) >= (1 if leaders else _replicas(replica_specs[r])) for r in deciders
        )
        succeeded = all(
            statuses.get(r, {}).get("succeeded", 0) >= _replicas(replica_specs[r]) for r in deciders
        )
        failed = next((r for r in replica_specs if statuses.get(r, {}).get("failed", 0)), None)
        if failed is not None and (replica_specs[failed].get("restartPolicy") or "") != "OnFailure":
            message = (
                f"{kind} {name} is failed because {statuses[failed]['failed']} {failed} replica(s) failed."
            )
            return _set(conditions, _condition("Failed", f"{kind}Failed", message, now), running=False)
        if succeeded:
            message = f"{kind} {namespace}/{name} successfully completed."
            return _set(conditions, _condition("Succeeded", f"{kind}Succeeded", message, now), running=False)
        if running and not any(c["type"] == "Running" and c.get("status") == "True" for c in conditions):
            return _set(
                conditions, _condition("Running", f"{kind}Running", f"{kind} {name} is running.", now)
            )
        return conditions


def _selector(framework: Framework, name: str, rtype: str, index: int) -> dict[str, str]:
    return {
        JOB_NAME_LABEL: name,
        "training.kubeflow.org/operator-name": framework.operator_name,
        "training.kubeflow.org/replica-type": rtype.lower(),
        "training.kubeflow.org/replica-index": str(index),
    }


def _replica_type(pod: Obj) -> str:
    return str((pod["metadata"].get("labels") or {}).get("training.kubeflow.org/replica-type", ""))


def _port(framework: Framework, spec: Obj) -> int:
    for container in ((spec.get("template") or {}).get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == framework.port_name:
                return int(port.get("containerPort") or framework.default_port)
    return framework.default_port


def _framework_env(job: Obj, framework: Framework, replica_specs: Obj, rtype: str, index: int) -> list[Obj]:
    name = job["metadata"]["name"]
    if framework.kind == "PyTorchJob":
        master = "Master" if "Master" in replica_specs else None
        world = sum(_replicas(s) for s in replica_specs.values())
        rank = index if rtype == "Master" else index + (1 if master else 0)
        port = _port(framework, replica_specs.get("Master") or replica_specs[rtype])
        env = [{"name": "PYTHONUNBUFFERED", "value": "1"}]
        if master:
            env += [
                {"name": "MASTER_PORT", "value": str(port)},
                {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
            ]
        return [*env, {"name": "WORLD_SIZE", "value": str(world)}, {"name": "RANK", "value": str(rank)}]
    if framework.kind == "TFJob":
        cluster = {
            r.lower(): [
                f"{name}-{r.lower()}-{i}.{job['metadata']['namespace']}.svc:{_port(framework, s)}"
                for i in range(_replicas(s))
            ]
            for r, s in replica_specs.items()
        }
        config = {"cluster": cluster, "task": {"type": rtype.lower(), "index": index}, "environment": "cloud"}
        return [{"name": "TF_CONFIG", "value": json.dumps(config, separators=(",", ":"))}]
    return []


def _condition(type_: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }


def _set(conditions: list[Obj], new: Obj, *, running: bool = True) -> list[Obj]:
    kept = [c for c in conditions if c["type"] != new["type"]]
    if not running:
        kept = [{**c, "status": "False"} if c["type"] == "Running" else c for c in kept]
    return [*kept, new]


def _now_of(conditions: list[Obj], type_: str) -> str:
    return next((c.get("lastTransitionTime", "") for c in conditions if c["type"] == type_), "")
