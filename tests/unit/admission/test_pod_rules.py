"""Volcano's pod admission: the job-disruption-budget annotations, judged only for our pods, and a
pod webhook registered so that its outage blocks no pod."""

from __future__ import annotations

from typing import Any

import pytest

from services.admission import registration
from services.admission.review import mutate, validate

from .builders import admission_review, context

pytestmark = pytest.mark.unit

MIN = "volcano.sh/jdb-min-available"
MAX = "volcano.sh/jdb-max-unavailable"


def pod(scheduler: str = "volcano", **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "annotations": annotations},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}]},
    }


def verdict(obj: dict[str, Any]) -> dict[str, Any]:
    return validate(admission_review(obj), context())["response"]


@pytest.mark.parametrize("value", ["1", "3", "50%", "1%", "99%"])
@pytest.mark.parametrize("key", [MIN, MAX])
def test_a_positive_count_or_a_percentage_below_100_is_allowed(key: str, value: str) -> None:
    assert verdict(pod(**{key: value}))["allowed"] is True


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", f'invalid value <"0"> for {MIN}, it must be a positive integer'),
        ("-2", f'invalid value <"-2"> for {MIN}, it must be a positive integer'),
        ("100%", f'invalid value <"100%"> for {MIN}, it must be a valid percentage which between 1% ~ 99%'),
        ("0%", f'invalid value <"0%"> for {MIN}, it must be a valid percentage which between 1% ~ 99%'),
        ("half", f'invalid value strconv.Atoi: parsing "half": invalid syntax for {MIN}'),
    ],
)
def test_a_bad_budget_is_refused_with_volcanos_message(value: str, message: str) -> None:
    response = verdict(pod(**{MIN: value}))
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["message"].startswith(message)
    assert response["status"]["details"]["causes"][0]["field"] == f"metadata.annotations[{MIN}]"


def test_both_budgets_at_once_are_refused() -> None:
    response = verdict(pod(**{MIN: "2", MAX: "1"}))
    assert response["allowed"] is False
    assert response["status"]["message"].startswith(
        f"not allow configure multiple annotations <[{MIN} {MAX}]> at same time"
    )


@pytest.mark.parametrize(
    "obj",
    [
        pod("default-scheduler", **{MIN: "0"}),  # another scheduler's pod: not ours to judge
        pod(**{MIN: "0", "scheduling.k8s.io/group-name": "pg"}),  # a gang member: its PodGroup rules
    ],
    ids=["other-scheduler", "gang-member"],
)
def test_pods_volcano_does_not_judge_are_allowed(obj: dict[str, Any]) -> None:
    assert verdict(obj)["allowed"] is True


def test_pods_are_never_mutated_nor_judged_on_update() -> None:
    bad = pod(**{MIN: "0"})
    assert mutate(admission_review(bad), context())["response"] == {
        "allowed": True,
        "uid": admission_review(bad)["request"]["uid"],
    }
    assert validate(admission_review(bad, "UPDATE", old=bad), context())["response"]["allowed"] is True


def test_the_pod_webhook_validates_creates_only_and_fails_open() -> None:
    configs = registration.configurations(ca_pem=b"ca", base_url="https://a", service=None, timeout=5)
    by_kind = {c["kind"]: c["webhooks"] for c in configs}
    pod_hooks = [
        (kind, hook)
        for kind, hooks in by_kind.items()
        for hook in hooks
        if hook["rules"][0]["resources"] == ["pods"]
    ]
    assert [kind for kind, _ in pod_hooks] == ["ValidatingWebhookConfiguration"]
    ((_, hook),) = pod_hooks
    assert hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["failurePolicy"] == "Ignore"
    # No objectSelector: a label is the user's, and a selector on one would let a pod skip its
    # validation (a pod naming its PodGroup is let through by the webhook itself).
    assert "objectSelector" not in hook
    others = [h for hooks in by_kind.values() for h in hooks if h is not hook]
    assert {h["failurePolicy"] for h in others} == {"Fail"}


def test_the_webhooks_are_volcanos_on_volcanos_operations_and_no_more() -> None:
    """Volcano's chart (webhooks.yaml): every other write, a PodGroup's status updates above all
    (one or two per pod), costs no webhook call."""
    configs = registration.configurations(ca_pem=b"ca", base_url="https://a", service=None, timeout=5)
    registered = {
        (config["kind"].removesuffix("WebhookConfiguration"), rule["resources"][0]): sorted(
            rule["operations"]
        )
        for config in configs
        for hook in config["webhooks"]
        for rule in hook["rules"]
    }
    assert registered == {
        ("Mutating", "jobs"): ["CREATE"],
        ("Mutating", "queues"): ["CREATE"],
        ("Mutating", "podgroups"): ["CREATE"],
        ("Validating", "jobs"): ["CREATE", "UPDATE"],
        ("Validating", "queues"): ["CREATE", "DELETE", "UPDATE"],
        ("Validating", "podgroups"): ["CREATE"],
        ("Validating", "hypernodes"): ["CREATE", "UPDATE"],
        ("Validating", "pods"): ["CREATE"],
    }
    assert not any("objectSelector" in hook for config in configs for hook in config["webhooks"])
