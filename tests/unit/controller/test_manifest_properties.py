"""Properties of the manifests over generated jobs: names, links and gang resources."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.controller.core.jobpodgroup import min_resources
from services.controller.core.pods import build_pod, desired_pods
from shared.domain.resources import CPU, PODS

from .manifests import container, job, task

pytestmark = pytest.mark.unit

TASKS = st.lists(
    st.tuples(st.sampled_from(["ps", "worker", "chief", "eval-x"]), st.integers(0, 4), st.integers(1, 8)),
    min_size=1,
    max_size=4,
    unique_by=lambda t: t[0],
)


def _job(tasks: list[tuple[str, int, int]], min_available: int | None = None) -> dict[str, object]:
    built = []
    for name, replicas, cpu in tasks:
        t = task(name, replicas)
        t["template"]["spec"]["containers"] = [container(cpu=str(cpu))]
        built.append(t)
    j = job(*built, plugins={"env": [], "svc": []})
    if min_available is not None:
        j["spec"]["minAvailable"] = min_available  # type: ignore[index]
    return j


@settings(max_examples=100, deadline=None)
@given(tasks=TASKS)
def test_every_desired_pod_is_built_with_its_name_and_links(tasks: list[tuple[str, int, int]]) -> None:
    j = _job(tasks)
    wanted = desired_pods(j)
    assert len({name for _, _, name in wanted}) == len(wanted) == sum(r for _, r, _ in tasks)
    for task_index, pod_index, name in wanted:
        pod = build_pod(j, task_index, pod_index)
        meta = pod["metadata"]
        assert meta["name"] == name
        assert meta["annotations"]["scheduling.k8s.io/group-name"] == "tf-u-123"
        assert meta["labels"]["volcano.sh/task-index"] == str(pod_index)
        assert meta["labels"]["volcano.sh/task-spec"] == tasks[task_index][0]
        assert pod["spec"]["hostname"] == name
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["VC_TASK_INDEX"] == str(pod_index)


@settings(max_examples=100, deadline=None)
@given(tasks=TASKS)
def test_gang_of_every_pod_needs_every_pods_resources(tasks: list[tuple[str, int, int]]) -> None:
    total = sum(r for _, r, _ in tasks)
    needed = min_resources(_job(tasks, total))
    assert needed[CPU] == sum(r * cpu for _, r, cpu in tasks) * 1000
    assert needed[PODS] == total * 1000


@settings(max_examples=100, deadline=None)
@given(tasks=TASKS, data=st.data())
def test_gang_resources_grow_with_min_available(
    tasks: list[tuple[str, int, int]], data: st.DataObject
) -> None:
    total = sum(r for _, r, _ in tasks)
    low = data.draw(st.integers(0, total))
    high = data.draw(st.integers(low, total))
    smaller, larger = min_resources(_job(tasks, low)), min_resources(_job(tasks, high))
    assert smaller[PODS] == low * 1000
    assert smaller.fits_in(larger)
