"""The control API under /simulator/v1: what a test or scenario asks of the simulated cluster
that the Kubernetes API has no verb for.

  POST   /simulator/v1/namespaces/{ns}/pods/{name}/succeed          end the pod, exit code 0
  POST   /simulator/v1/namespaces/{ns}/pods/{name}/fail             {"exitCode": 3} (default 1)
  POST   /simulator/v1/namespaces/{ns}/pods/{name}/evict            pods/eviction
  POST   /simulator/v1/nodes                                        {name, cpu, memory, ...}
  DELETE /simulator/v1/nodes/{name}                                 the node and its pods
  POST   /simulator/v1/nodes/{name}/{cordon|uncordon|notready|ready}
  POST   /simulator/v1/nodes/{name}/taint                           {key, value, effect}
  POST   /simulator/v1/nodes/{name}/untaint                         {key, effect?}
  GET    /simulator/v1/audit                                        writes served, pods created and bound
  GET    /simulator/v1/audit/pods                                   when each pod was created and bound
  GET    /simulator/v1/audit/trace                                  pod placements, minMembers, queues
  DELETE /simulator/v1/audit                                        start counting afresh

Node bodies use the nodes file's fields. Where the Kubernetes API has an equivalent (delete a
node, cordon = spec.unschedulable, taints = spec.taints) this goes through the same verbs.
"""

from __future__ import annotations

from typing import Any

from services.simulator.cluster import Cluster
from services.simulator.kubelets.nodes import NodeFileError, parse_node_entry
from services.simulator.store import errors
from services.simulator.store.api_resources import NODES

_NOT_FOUND = errors.ApiError(404, "NotFound", "no such simulator control request")


async def handle(cluster: Cluster, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
    body = body if isinstance(body, dict) else {}
    if len(parts) == 5 and parts[0] == "namespaces" and parts[2] == "pods" and method == "POST":
        return 200, await _pod_action(cluster, parts[1], parts[3], parts[4], body)
    if parts == ["nodes"] and method == "POST":
        return 201, _add_nodes(cluster, body)
    if len(parts) == 2 and parts[0] == "nodes" and method == "DELETE":
        return 200, await cluster.operations.delete(NODES, "", parts[1])
    if len(parts) == 3 and parts[0] == "nodes" and method == "POST":
        return 200, await _node_action(cluster, parts[1], parts[2], body)
    if parts == ["audit", "trace"] and method == "GET":
        return 200, cluster.trace.report()
    if parts[:1] == ["audit"] and len(parts) <= 2 and method == "GET":
        return 200, cluster.audit.report(pods=parts[1:] == ["pods"])
    if parts == ["audit"] and method == "DELETE":
        cluster.audit.reset()
        cluster.trace.reset()
        return 200, {}
    raise _NOT_FOUND


async def _pod_action(cluster: Cluster, namespace: str, name: str, action: str, body: dict[str, Any]) -> Any:
    if action == "succeed":
        return cluster.kubelets.finish_pod(namespace, name, 0)
    if action == "fail":
        exit_code = int(body.get("exitCode", 1))
        if exit_code == 0:
            raise errors.bad_request("a failing pod needs a non-zero exitCode")
        return cluster.kubelets.finish_pod(namespace, name, exit_code)
    if action == "evict":
        return await cluster.operations.evict(
            namespace,
            name,
            {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace},
            },
        )
    raise _NOT_FOUND


def _add_nodes(cluster: Cluster, body: dict[str, Any]) -> Any:
    try:
        specs = parse_node_entry(body)
    except NodeFileError as error:
        raise errors.bad_request(str(error)) from None
    created = [cluster.kubelets.add_node(spec) for spec in specs]
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": created}


async def _node_action(cluster: Cluster, name: str, action: str, body: dict[str, Any]) -> Any:
    operations = cluster.operations
    node = cluster.store.get(NODES, "", name)
    taints = list((node.get("spec") or {}).get("taints") or [])
    if action in ("cordon", "uncordon"):
        return await operations.patch(
            NODES,
            "",
            name,
            "application/merge-patch+json",
            {"spec": {"unschedulable": action == "cordon" or None}},
        )
    if action in ("notready", "ready"):
        return cluster.kubelets.set_node_ready(name, action == "ready")
    if action == "taint":
        if not body.get("key") or body.get("effect") not in (
            "NoSchedule",
            "PreferNoSchedule",
            "NoExecute",
        ):
            raise errors.bad_request(
                "a taint needs a key and an effect (NoSchedule, PreferNoSchedule, NoExecute)"
            )
        taint = {k: str(body[k]) for k in ("key", "value", "effect") if k in body}
        kept = [t for t in taints if (t.get("key"), t.get("effect")) != (taint["key"], taint["effect"])]
        return await operations.patch(
            NODES, "", name, "application/merge-patch+json", {"spec": {"taints": [*kept, taint]}}
        )
    if action == "untaint":
        kept = [
            t
            for t in taints
            if not (t.get("key") == body.get("key") and body.get("effect") in (None, t.get("effect")))
        ]
        return await operations.patch(
            NODES, "", name, "application/merge-patch+json", {"spec": {"taints": kept or None}}
        )
    raise _NOT_FOUND
