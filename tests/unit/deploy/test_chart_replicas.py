"""The charts' `replicas` for the services whose replicas need more than a count: controller
replicas each with a replica number of their own, watcher replicas with the database their kind
leases live in (docs/scaling.md, docs/deploy.md)."""

from __future__ import annotations

import pytest

from tests.unit.deploy.rendering import container, env_of, of_kind, only, render, workload

pytestmark = pytest.mark.unit

POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']"


def test_one_controller_is_a_deployment_and_keeps_replica_number_zero() -> None:
    objects = render("phalanx-controller")
    assert only(objects, "Deployment")["spec"]["replicas"] == 1
    assert of_kind(objects, "StatefulSet") == []
    assert "CONTROLLER_REPLICA" not in env_of(objects)  # the setting's default, 0


@pytest.mark.parametrize("replicas", [2, 3, 16])
def test_controller_replicas_are_a_stateful_set_numbered_by_their_ordinals(replicas: int) -> None:
    objects = render("phalanx-controller", {"replicas": replicas})
    assert of_kind(objects, "Deployment") == []
    stateful = only(objects, "StatefulSet")
    assert stateful["spec"]["replicas"] == replicas
    # Every replica starts on its own: none waits for a lower ordinal to be ready.
    assert stateful["spec"]["podManagementPolicy"] == "Parallel"
    assert env_of(objects)["CONTROLLER_REPLICA"]["valueFrom"] == {"fieldRef": {"fieldPath": POD_INDEX}}


def test_controller_replicas_keep_everything_else_of_the_single_one() -> None:
    one, three = render("phalanx-controller"), render("phalanx-controller", {"replicas": 3})
    replicated_env = {k: v for k, v in env_of(three).items() if k != "CONTROLLER_REPLICA"}
    assert replicated_env == env_of(one)
    assert {k: v for k, v in container(three).items() if k != "env"} == {
        k: v for k, v in container(one).items() if k != "env"
    }
    pod_labels = workload(three)["spec"]["template"]["metadata"]["labels"]
    assert workload(three)["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert len(of_kind(three, "PodDisruptionBudget")) == 1


def test_more_controllers_than_replica_numbers_are_refused_naming_the_value() -> None:
    with pytest.raises(Exception, match="replicas") as refused:
        render("phalanx-controller", {"replicas": 17})
    assert "16" in str(refused.value)


@pytest.mark.parametrize("replicas", [1, 2])
def test_watcher_replicas_get_the_database_their_kind_leases_live_in(replicas: int) -> None:
    objects = render("phalanx-watcher", {"replicas": replicas})
    assert only(objects, "Deployment")["spec"]["replicas"] == replicas
    assert env_of(objects)["WATCHER_POSTGRES__URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "phalanx-postgres-watcher",
        "key": "url",
    }
