"""Each service chart grants exactly the Kubernetes access its service needs, and nothing more.

The rendered Roles and ClusterRoles are flattened into (namespace, apiGroup, resource, verb,
resourceNames) grants and compared with the full list each service is meant to have, so an added
verb shows up here as a failing test to be argued in review, not as a silent widening.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.admission import registration
from tests.unit.deploy.rendering import (
    NAMESPACE,
    RBAC_KINDS,
    SERVICE_CHARTS,
    of_kind,
    only,
    render,
)

pytestmark = pytest.mark.unit

CLUSTER = "*cluster*"
READ = ("get", "list", "watch")
WRITE = ("get", "list", "create", "update", "patch", "delete")

Grant = tuple[str, str, str, str, tuple[str, ...]]  # namespace, group, resource, verb, names


def grants(objects: list[dict[str, Any]]) -> set[Grant]:
    found: set[Grant] = set()
    for role in of_kind(objects, "ClusterRole") + of_kind(objects, "Role"):
        namespace = role["metadata"].get("namespace", CLUSTER)
        for rule in role["rules"]:
            names = tuple(rule.get("resourceNames", ()))
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        found.add((namespace, group, resource, verb, names))
    return found


def expand(namespace: str, group: str, resources: str, verbs: tuple[str, ...]) -> set[Grant]:
    return {(namespace, group, r, v, ()) for r in resources.split() for v in verbs}


WATCHER = (
    expand(CLUSTER, "", "nodes pods persistentvolumes persistentvolumeclaims", READ)
    | expand(CLUSTER, "storage.k8s.io", "storageclasses", READ)
    | expand(CLUSTER, "resource.k8s.io", "deviceclasses resourceclaims resourceslices", READ)
    | expand(CLUSTER, "scheduling.k8s.io", "priorityclasses", READ)
    | expand(CLUSTER, "apps", "replicasets statefulsets", READ)
    | expand(CLUSTER, "policy", "poddisruptionbudgets", READ)
    | expand(CLUSTER, "batch.volcano.sh", "jobs", READ)
    | expand(CLUSTER, "scheduling.volcano.sh", "podgroups queues", READ)
    | expand(CLUSTER, "bus.volcano.sh", "commands", READ)
    | expand(CLUSTER, "topology.volcano.sh", "hypernodes", READ)
    | expand("volcano-system", "", "configmaps", READ)
)

CONTROLLER = (
    expand(CLUSTER, "", "pods services configmaps secrets persistentvolumeclaims", WRITE)
    | expand(CLUSTER, "", "pods/binding pods/eviction", ("create",))
    | expand(CLUSTER, "networking.k8s.io", "networkpolicies", WRITE)
    | expand(CLUSTER, "resource.k8s.io", "resourceclaims", ("get",))
    | expand(CLUSTER, "resource.k8s.io", "resourceclaims/status", ("get", "update", "patch"))
    | expand(CLUSTER, "", "events", ("create", "patch"))
    | expand(CLUSTER, "events.k8s.io", "events", ("create", "patch"))
    | expand(CLUSTER, "scheduling.volcano.sh", "podgroups", WRITE)
    | expand(
        CLUSTER,
        "scheduling.volcano.sh",
        "podgroups/status queues/status",
        ("get", "update", "patch"),
    )
    | expand(CLUSTER, "scheduling.volcano.sh", "queues", ("get", "list", "create"))
    | expand(CLUSTER, "scheduling.k8s.io", "priorityclasses", ("get", "list"))
    | expand(CLUSTER, "apps", "replicasets statefulsets", ("get", "list"))
    | expand(CLUSTER, "batch.volcano.sh", "jobs", ("get", "list"))
    | expand(CLUSTER, "batch.volcano.sh", "jobs/status", ("get", "update", "patch"))
    | expand(CLUSTER, "batch.volcano.sh", "jobs/finalizers", ("update",))
    | expand(CLUSTER, "bus.volcano.sh", "commands", ("get", "list", "delete"))
    | expand(CLUSTER, "", "nodes", ("get", "list"))
    | expand(CLUSTER, "topology.volcano.sh", "hypernodes", WRITE)
    | expand(CLUSTER, "topology.volcano.sh", "hypernodes/status", ("get", "update", "patch"))
)

# The console reads a Job's tasks and its PodGroup's conditions, one object at a time.
CONSOLE = expand(CLUSTER, "batch.volcano.sh", "jobs", ("get",)) | expand(
    CLUSTER, "scheduling.volcano.sh", "podgroups", ("get",)
)

WEBHOOK_CONFIGURATIONS = "validatingwebhookconfigurations mutatingwebhookconfigurations"
ADMISSION = (
    expand(CLUSTER, "scheduling.volcano.sh", "queues", ("get", "list"))
    | expand(CLUSTER, "scheduling.k8s.io", "priorityclasses", ("get", "list"))
    | expand(CLUSTER, "admissionregistration.k8s.io", WEBHOOK_CONFIGURATIONS, ("create",))
    | {
        (CLUSTER, "admissionregistration.k8s.io", resource, verb, ("phalanx-admission",))
        for resource in WEBHOOK_CONFIGURATIONS.split()
        for verb in ("get", "update", "patch")
    }
    # The Secret its replicas share their certificate through (values tls.managedSecret), in its
    # own namespace: made once, then read and renewed by name only.
    | {(NAMESPACE, "", "secrets", "create", ())}
    | {(NAMESPACE, "", "secrets", verb, ("phalanx-admission-tls",)) for verb in ("get", "update")}
)

EXPECTED = {
    "phalanx-watcher": WATCHER,
    "phalanx-console": CONSOLE,
    "phalanx-controller": CONTROLLER,
    "phalanx-admission": ADMISSION,
    "phalanx-scheduler": set(),
}


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_chart_grants_exactly_what_its_service_needs(chart: str) -> None:
    granted = grants(render(chart))
    assert sorted(granted - EXPECTED[chart]) == [], "granted beyond the service's needs"
    assert sorted(EXPECTED[chart] - granted) == [], "missing a grant the service relies on"


def test_scheduler_has_no_kubernetes_access_at_all() -> None:
    objects = render("phalanx-scheduler")
    assert [obj for obj in objects if obj["kind"] in RBAC_KINDS] == []
    assert only(objects, "ServiceAccount")["automountServiceAccountToken"] is False
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False


def test_watcher_only_reads() -> None:
    verbs = {verb for (_, _, _, verb, _) in grants(render("phalanx-watcher"))}
    assert verbs <= set(READ)


def test_watcher_reads_configmaps_only_where_the_scheduler_config_lives() -> None:
    granted = grants(render("phalanx-watcher", {"schedulerConfigNamespace": "batch-system"}))
    configmaps = {namespace for (namespace, _, resource, _, _) in granted if resource == "configmaps"}
    assert configmaps == {"batch-system"}


def test_admission_updates_only_the_webhook_configurations_the_service_registers() -> None:
    registered = {
        config["metadata"]["name"]
        for config in registration.configurations(
            ca_pem=b"ca", base_url=None, service=("phalanx-admission", NAMESPACE, 443), timeout=10
        )
    }
    scoped = {
        names
        for (_, group, _, verb, names) in grants(render("phalanx-admission", {"fullnameOverride": "x"}))
        if group == "admissionregistration.k8s.io" and verb != "create"
    }
    assert scoped == {tuple(sorted(registered))}


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_no_wildcards_and_no_privilege_escalation(chart: str) -> None:
    for namespace, group, resource, verb, _ in grants(render(chart)):
        assert "*" not in (namespace, group, resource, verb)
        assert verb not in ("escalate", "bind", "impersonate")
        assert group != "rbac.authorization.k8s.io"


@pytest.mark.parametrize("chart", ["phalanx-watcher", "phalanx-controller", "phalanx-admission"])
def test_bindings_name_the_charts_service_account(chart: str) -> None:
    objects = render(chart)
    account = only(objects, "ServiceAccount")["metadata"]["name"]
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account
    roles = {(r["kind"], r["metadata"]["name"]) for r in objects if r["kind"] in ("ClusterRole", "Role")}
    bindings = of_kind(objects, "ClusterRoleBinding") + of_kind(objects, "RoleBinding")
    assert len(bindings) == len(roles)
    for binding in bindings:
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles


@pytest.mark.parametrize("chart", ["phalanx-watcher", "phalanx-controller", "phalanx-admission"])
def test_rbac_can_be_left_to_the_cluster_admin(chart: str) -> None:
    values = {"rbac": {"create": False}, "serviceAccount": {"create": False, "name": "ops-made"}}
    objects = render(chart, values)
    assert [obj for obj in objects if obj["kind"] in (*RBAC_KINDS, "ServiceAccount")] == []
    assert only(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "ops-made"
