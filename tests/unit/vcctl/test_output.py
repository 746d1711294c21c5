"""vcctl's tables, column for column, and its resource-list flags."""

from __future__ import annotations

import pytest

from phalanx.vcctl import output

pytestmark = pytest.mark.unit


def job(name: str, namespace: str = "default", **status: object) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-11-25T17:08:01Z"},
        "spec": {"tasks": [{"replicas": 2}, {"replicas": 1}], "queue": "team-a", "schedulerName": "volcano"},
        "status": {"state": {"phase": "Running"}, "minAvailable": 3, "running": 3, **status},
    }


def test_job_list_has_vcctls_columns_and_widths() -> None:
    table = output.job_table([job("a"), job("longer-name", retryCount=2)], all_namespaces=False)
    header, first, second = table.splitlines()
    assert header == "Name".ljust(len("longer-name") + 3) + (
        "Creation       Phase       JobType     Replicas    Min   Pending   Running   "
        "Succeeded   Failed    Unknown     RetryCount"
    )
    assert first.split() == ["a", "2026-11-25", "Running", "Batch", "3", "3", "0", "3", "0", "0", "0", "0"]
    assert second.split()[-1] == "2"
    assert header.index("Creation") == first.index("2026-11-25") == len("longer-name") + 3


def test_all_namespaces_puts_the_namespace_first_and_wide_appends_queue_and_scheduler() -> None:
    header, row = output.job_table([job("a", "ml")], all_namespaces=True, wide=True).splitlines()
    assert header.split()[0] == "Namespace"
    assert header.split()[-2:] == ["Queue", "Scheduler"]
    assert row.split()[0] == "ml"
    assert row.split()[-2:] == ["team-a", "volcano"]


def test_queue_list_counts_podgroups_by_phase() -> None:
    groups = [
        {"spec": {"queue": "team-a"}, "status": {"phase": "Running"}},
        {"spec": {"queue": "team-a"}, "status": {"phase": "Inqueue"}},
        {"spec": {}, "status": {}},
    ]
    queues = [
        {"metadata": {"name": "team-a"}, "spec": {"weight": 2}, "status": {"state": "Open"}},
        {"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}},
    ]
    header, team, default = output.queue_table(queues, output.podgroup_counts(groups)).splitlines()
    assert (
        header.rstrip()
        == "Name                     Weight  State   Inqueue Pending Running Unknown Completed"
    )
    assert team.split() == ["team-a", "2", "Open", "1", "0", "1", "0", "0"]
    assert default.split() == ["default", "1", "Open", "0", "1", "0", "0", "0"]


def test_resource_flags_parse_as_vcctl_does_and_name_the_flag_when_wrong() -> None:
    assert output.parse_resources("cpu=1000m,memory=100Mi", "--requests") == {
        "cpu": "1000m",
        "memory": "100Mi",
    }
    with pytest.raises(
        ValueError, match="--limits: invalid argument syntax cpu, expected <resource>=<value>"
    ):
        output.parse_resources("cpu", "--limits")
