"""`phalanx up --topology`: racks and spines over the simulated nodes, and the discovery config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.topology import (
    RACK_LABEL,
    SPINE_LABEL,
    TopologyError,
    TopologySpec,
    discovery_configmap,
    labelled_nodes,
    parse_topology,
    write_nodes_file,
)
from services.controller.core.topology_discovery import discover, parse_discovery

pytestmark = pytest.mark.unit


def test_the_value_is_read_and_bad_values_are_named() -> None:
    assert parse_topology("nodes=64,racks=16,spines=4") == TopologySpec(16, 4, 64)
    assert parse_topology("racks=2") == TopologySpec(2)
    for bad, says in (
        ("spines=2", "racks=N is required"),
        ("racks=0", "'racks=0' is not one of"),
        ("racks=2,racks=3", "racks is given twice"),
        ("racks=2,spines=3", "3 spines need at least as many racks"),
        ("racks=2,zones=1", "'zones=1' is not one of"),
    ):
        with pytest.raises(TopologyError, match=says):
            parse_topology(bad)


def test_nodes_are_split_into_contiguous_racks_and_racks_into_spines() -> None:
    nodes = labelled_nodes(TopologySpec(racks=4, spines=2, nodes=8), None)
    racks = [n["labels"][RACK_LABEL] for n in nodes]
    spines = [n["labels"][SPINE_LABEL] for n in nodes]
    assert racks == ["rack-0", "rack-0", "rack-1", "rack-1", "rack-2", "rack-2", "rack-3", "rack-3"]
    assert spines == ["spine-0"] * 4 + ["spine-1"] * 4
    assert nodes[0] == {"name": "node-0", "cpu": "8", "memory": "32Gi", "labels": nodes[0]["labels"]}
    with pytest.raises(TopologyError, match="5 racks need at least as many nodes, not 4"):
        labelled_nodes(TopologySpec(racks=5), None)


def test_a_nodes_file_keeps_its_shapes_and_labels(tmp_path: Path) -> None:
    given = tmp_path / "nodes.yaml"
    given.write_text(yaml.safe_dump([{"namePrefix": "gpu-", "count": 4, "gpu": 8, "labels": {"pool": "a"}}]))
    written = yaml.safe_load(write_nodes_file(TopologySpec(racks=2), given, tmp_path / "state").read_text())
    assert [n["name"] for n in written] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert written[3] == {"gpu": 8, "labels": {"pool": "a", RACK_LABEL: "rack-1"}, "name": "gpu-3"}


def test_the_discovery_config_builds_racks_under_spines() -> None:
    spec = TopologySpec(racks=4, spines=2, nodes=8)
    configmap = discovery_configmap(spec)
    discovery = parse_discovery(configmap["data"]["volcano-controller.conf"])
    assert discovery is not None
    found = discover([(n["name"], n["labels"]) for n in labelled_nodes(spec, None)], discovery)
    tiers = sorted((h["spec"]["tier"], len(h["spec"]["members"])) for h in found.values())
    assert tiers == [(1, 2)] * 4 + [(2, 2)] * 2
