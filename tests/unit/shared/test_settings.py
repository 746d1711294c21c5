"""Every service's settings fail fast, naming the environment variable and the rule it broke."""

from __future__ import annotations

import pytest

from services.scheduler.settings import SchedulerSettings
from services.watcher.settings import WatcherSettings
from shared.config import SettingsError, load_settings

pytestmark = pytest.mark.unit


def test_valid_environment_is_read_with_prefix_and_nesting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDULER_CYCLE_PERIOD_SECONDS", "0.5")
    monkeypatch.setenv("SCHEDULER_NATS__URL", "nats://example:4222")
    settings = load_settings(SchedulerSettings)
    assert settings.cycle_period_seconds == 0.5
    assert settings.nats.url == "nats://example:4222"


def test_a_bad_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SCHEDULER_CYCLE_PERIOD_SECONDS", "-1")
    with pytest.raises(SettingsError):
        load_settings(SchedulerSettings)
    assert (
        "invalid setting SCHEDULER_CYCLE_PERIOD_SECONDS: Input should be greater than 0"
        in capsys.readouterr().err
    )


def test_a_bad_nested_value_names_the_nested_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WATCHER_LOG__LEVEL", "LOUD")
    with pytest.raises(SettingsError):
        load_settings(WatcherSettings)
    assert "invalid setting WATCHER_LOG__LEVEL" in capsys.readouterr().err
