"""The alert rules and the Grafana dashboards shipped in the scheduler's chart query real metrics.

Every PromQL expression of files/phalanx-alerts.yaml and every query of files/dashboards/*.json
may name only metric series that a Phalanx service defines (its Prometheus registry, once the
services' metrics modules are imported): a renamed metric would otherwise leave an alert that never
fires and a panel that stays empty. The chart renders both into ConfigMaps when switched on.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import services.admission.server
import services.controller.metrics
import services.scheduler.metrics
import services.watcher.watching
import shared.metrics
from shared.metrics import exposition
from tests.unit.deploy.rendering import CHARTS, of_kind, render

pytestmark = pytest.mark.unit

FILES = CHARTS / "phalanx-scheduler" / "files"
ALERTS = FILES / "phalanx-alerts.yaml"
DASHBOARDS = sorted((FILES / "dashboards").glob("*.json"))
SERVICE_METRICS = (
    services.admission.server,
    services.controller.metrics,
    services.scheduler.metrics,
    services.watcher.watching,
    shared.metrics,
)
PROMQL_WORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}
)
SERIES_SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("_sum", "_count"),
}


def defined_series() -> set[str]:
    """Every series name the services can expose, read from the `# TYPE` lines of what /metrics
    serves (a family is listed even before it has a sample), with the histograms' series."""
    names: set[str] = set()
    for line in exposition().decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            names.add(name)
            names.update(name + suffix for suffix in SERIES_SUFFIXES.get(kind, ()))
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (label matchers, groupings and functions aside)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group() in PROMQL_WORDS:
            continue  # a function or an operator
        if match.start() and (text[match.start() - 1].isdigit() or text[match.start() - 1] == "."):
            continue  # the unit of a duration or a number's exponent
        names.add(match.group())
    return names


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


def dashboard_queries(dashboard: dict[str, Any]) -> Iterator[str]:
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            label_values = re.fullmatch(r"label_values\((\w+),\s*\w+\)", query)
            yield label_values.group(1) if label_values else query


def test_the_extractor_finds_names_and_skips_functions_labels_and_durations() -> None:
    expr = 'sum by (le) (rate(volcano_x_bucket{queue_name=~"$queue"}[5m])) / 1e3 > on(a) b_total offset 1h'
    assert metric_names(expr) == {"volcano_x_bucket", "b_total"}


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_every_alert_rule_names_defined_metrics_and_says_what_to_do(rule: dict[str, Any]) -> None:
    names = metric_names(rule["expr"])
    assert names, rule["expr"]
    assert names <= defined_series(), f"{rule['alert']} names undefined metrics: {names - defined_series()}"
    assert rule["labels"]["severity"] in ("critical", "warning", "info")
    assert rule["annotations"]["summary"]
    assert rule["annotations"]["description"]


def test_the_alerts_cover_the_failures_operators_page_on() -> None:
    alerts = {rule["alert"] for rule in alert_rules()}
    for wanted in (
        "SchedulerStalled",
        "NoSchedulerLeader",
        "ConsumerLagGrowing",
        "DeadLetters",
        "OutboxStuck",
        "LeaderFlapping",
    ):
        assert f"Phalanx{wanted}" in alerts


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.stem)
def test_every_dashboard_query_names_defined_metrics(path: Path) -> None:
    dashboard = json.loads(path.read_text())
    defined = defined_series()
    queries = list(dashboard_queries(dashboard))
    assert queries
    for query in queries:
        names = metric_names(query)
        assert names, query
        assert names <= defined, f"{path.name}: {query!r} names undefined metrics: {names - defined}"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert dashboard["uid"]
    assert all(set(panel["gridPos"]) == {"x", "y", "w", "h"} for panel in dashboard["panels"])


def test_the_chart_ships_the_dashboard_and_the_rules_as_configmaps_when_asked() -> None:
    assert not [
        c
        for c in of_kind(render("phalanx-scheduler"), "ConfigMap")
        if c["metadata"]["name"].endswith("-dashboards")
    ]
    values = {
        "metrics": {"dashboards": {"enabled": True}, "alertRules": {"enabled": True, "labels": {"role": "x"}}}
    }
    maps = {c["metadata"]["name"]: c for c in of_kind(render("phalanx-scheduler", values), "ConfigMap")}
    dashboards = next(c for name, c in maps.items() if name.endswith("-dashboards"))
    rules = next(c for name, c in maps.items() if name.endswith("-alert-rules"))
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert set(dashboards["data"]) == {f"phalanx-{path.name}" for path in DASHBOARDS}
    for path in DASHBOARDS:
        assert json.loads(dashboards["data"][f"phalanx-{path.name}"]) == json.loads(path.read_text())
    assert yaml.safe_load(rules["data"]["phalanx-alerts.yaml"]) == yaml.safe_load(ALERTS.read_text())
    assert rules["metadata"]["labels"]["role"] == "x"


def test_the_generated_dashboards_are_what_the_script_writes() -> None:
    spec = importlib.util.spec_from_file_location("dashboards", CHARTS.parent / "scripts" / "dashboards.py")
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    for name, text in script.render().items():
        assert (FILES / "dashboards" / name).read_text() == text, (
            f"run scripts/dashboards.py: {name} is stale"
        )


def test_the_dashboards_cover_queues_jobs_and_the_system() -> None:
    titles = {json.loads(path.read_text())["uid"]: path for path in DASHBOARDS}
    assert set(titles) == {"phalanx-queues", "phalanx-jobs", "phalanx-system"}
    queries = {uid: " ".join(dashboard_queries(json.loads(path.read_text()))) for uid, path in titles.items()}
    for wanted in ("volcano_e2e_job_scheduling_latency_milliseconds", "phalanx_scheduler_underfilled_gangs"):
        assert wanted in queries["phalanx-jobs"]
    for wanted in (
        "phalanx_bus_consumer_pending",
        "phalanx_scheduler_cycle_seconds",
        "phalanx_kube_api_request_errors",
    ):
        assert wanted in queries["phalanx-system"]
