"""`phalanx up --scale` for the controller, watcher and scheduler replicas: how many may run, and
how each replica is named."""

from __future__ import annotations

import pytest

from phalanx.scale import ScaleError, parse, replica_names

pytestmark = pytest.mark.unit


def test_controllers_watchers_and_schedulers_scale_as_docker_compose_spells_it() -> None:
    assert parse(["controller=3", "watcher=2", "scheduler=2"]) == {
        "controller": 3,
        "watcher": 2,
        "scheduler": 2,
    }


def test_more_controller_replicas_than_have_durables_granted_are_refused() -> None:
    assert parse(["controller=16"]) == {"controller": 16}
    with pytest.raises(ScaleError, match=r"controller takes 1, 2, .*, 16"):
        parse(["controller=17"])
    with pytest.raises(ScaleError, match="controller takes"):
        parse(["controller=0"])


def test_replica_zero_keeps_the_service_s_name() -> None:
    assert replica_names("controller", 3) == ["controller", "controller-2", "controller-3"]
