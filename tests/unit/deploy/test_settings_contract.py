"""Every variable the compose file and the charts set is a setting the service actually reads.

The services' pydantic-settings classes ignore unknown variables, so a misspelt or renamed setting in
a deployment would be silently dropped (a webhook without its Service name, a kubeconfig never read).
This test reads the settings classes themselves and fails on any variable that names no field.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from pydantic_settings import BaseSettings

from tests.unit.deploy.rendering import REPO, SERVICE_CHARTS, SERVICES, env_of, render

pytestmark = pytest.mark.unit

SETTINGS_CLASSES = {
    "watcher": "services.watcher.settings:WatcherSettings",
    "admission": "services.admission.settings:AdmissionSettings",
    "controller": "services.controller.settings:ControllerSettings",
    "scheduler": "services.scheduler.settings:SchedulerSettings",
    "console": "services.console.settings:ConsoleSettings",
    "simulator": "services.simulator.settings:SimulatorSettings",
}


def settings_class(service: str) -> type[BaseSettings]:
    module, _, name = SETTINGS_CLASSES[service].partition(":")
    cls: type[BaseSettings] = getattr(importlib.import_module(module), name)
    return cls


def variables(service: str) -> set[str]:
    """The environment variable names the service's settings class reads."""
    cls = settings_class(service)
    prefix = str(cls.model_config.get("env_prefix", "")).upper()
    delimiter = cls.model_config.get("env_nested_delimiter") or ""
    names = set()
    for field, info in cls.model_fields.items():
        names.add(prefix + field.upper())
        nested = info.annotation
        if delimiter and isinstance(nested, type) and issubclass(nested, BaseModel):
            names |= {f"{prefix}{field.upper()}{delimiter}{sub.upper()}" for sub in nested.model_fields}
    return names


def test_the_settings_classes_are_the_services() -> None:
    for service in SETTINGS_CLASSES:
        prefix = settings_class(service).model_config.get("env_prefix")
        assert prefix == f"{service.upper()}_"


@pytest.mark.parametrize("service", [*SERVICES, "simulator"])
def test_compose_sets_only_real_settings(service: str) -> None:
    compose: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    environment = compose["services"][service].get("environment", {})
    assert set(environment) - variables(service) == set()


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
@pytest.mark.parametrize(
    "options",
    [{}, {"tls": {"existingSecret": "certs"}}],
    ids=["defaults", "supplied-certificate"],
)
def test_charts_set_only_real_settings(chart: str, options: dict[str, Any]) -> None:
    service = chart.removeprefix("phalanx-")
    values = options if service == "admission" else {}
    assert set(env_of(render(chart, values))) - variables(service) == set()
