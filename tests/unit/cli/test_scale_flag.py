"""`phalanx up --scale NAME=COUNT`: what is accepted, and a refusal that names the flag and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from phalanx import scale
from phalanx.cli import app

pytestmark = pytest.mark.unit


def test_counts_are_read_per_name_and_the_last_of_a_name_wins() -> None:
    assert scale.parse(["nats=3", "admission=2", "admission=3"]) == {"nats": 3, "admission": 3}
    assert scale.parse([]) == {}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("nats", "expected NAME=COUNT"),
        ("nats=three", "expected NAME=COUNT"),
        ("nats=-1", "expected NAME=COUNT"),
        ("postgres=2", "'postgres' cannot be scaled here"),
        ("nats=2", "nats takes 1, 3, 5"),
        ("admission=0", "admission takes 1, 2"),
    ],
)
def test_a_bad_value_is_refused_naming_the_flag_and_the_rule(value: str, says: str) -> None:
    with pytest.raises(scale.ScaleError, match=f"--scale '{value}'") as refused:
        scale.parse([value])
    assert says in str(refused.value)


def test_replicas_after_the_first_are_numbered_from_two() -> None:
    assert scale.replica_names("admission", 3) == ["admission", "admission-2", "admission-3"]
    assert scale.replica_names("admission", 1) == ["admission"]


def test_phalanx_up_refuses_a_bad_scale_before_starting_anything(tmp_path: Path) -> None:
    refused = CliRunner().invoke(app, ["up", "--state-dir", str(tmp_path), "--scale", "nats=2"])
    assert refused.exit_code == 2
    assert "--scale 'nats=2': nats takes 1, 3, 5" in refused.output
    assert not (tmp_path / "stack.json").exists()


def test_phalanx_chaos_refuses_a_bad_scale_before_starting_anything(tmp_path: Path) -> None:
    refused = CliRunner().invoke(app, ["chaos", "--state-dir", str(tmp_path), "--scale", "watcher=9"])
    assert refused.exit_code == 2
    assert "--scale 'watcher=9': watcher takes 1, 2, 3, 4" in refused.output
    assert not (tmp_path / "stack.json").exists()
