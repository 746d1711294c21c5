"""The lost-event check: the scheduler's tables against the cluster's objects, row by row."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.chaos.views import diff, expected

pytestmark = pytest.mark.unit


def obj(name: str, rv: int, **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "namespace": "default", "resourceVersion": str(rv)}
    } | fields


GANG_POD = obj("p", 7, spec={"schedulerName": "volcano"})
FOREIGN_PENDING = obj("f", 8, spec={"schedulerName": "default-scheduler"})
FOREIGN_BOUND = obj("b", 9, spec={"schedulerName": "default-scheduler", "nodeName": "n"})


def test_the_cluster_is_keyed_as_the_tables_are_and_only_what_the_watcher_publishes() -> None:
    view = expected(
        {
            "Node": [obj("n", 3)],
            "Pod": [GANG_POD, FOREIGN_PENDING, FOREIGN_BOUND],
            "ConfigMap": [obj("other", 4, data={"x": "y"})],
        },
        ["volcano"],
    )
    assert view["nodes"] == {"n": 3}
    assert view["pods"] == {"uid-p": 7, "uid-b": 9}, "a foreign pod counts once it is bound"
    assert view["scheduler_config"] == {}
    assert view["queues"] == {}, "every table is compared, an empty one too"


def test_missing_lingering_and_stale_rows_are_each_named() -> None:
    cluster = {"nodes": {"a": 1, "b": 2}, "pods": {"uid-p": 5}}
    tables = {"nodes": {"b": 1, "c": 4}, "pods": {"uid-p": 5}}
    assert diff(cluster, tables) == [
        "nodes: a is in the cluster but has no live row",
        "nodes: c lingers, deleted from the cluster (row at version 4)",
        "nodes: b at version 1, the cluster's is 2",
    ]
    assert diff(cluster, cluster) == []
