"""Write the jobs and system Grafana dashboards of charts/phalanx-scheduler/files/dashboards/.

Run `python scripts/dashboards.py` after changing a panel; tests/unit/deploy/test_monitoring.py
checks that every query names a metric a service defines and that each file is what this script
writes. The queue dashboard (queues.json) is kept by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "charts" / "phalanx-scheduler" / "files" / "dashboards"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def panel(
    number: int,
    title: str,
    x: int,
    y: int,
    targets: list[tuple[str, str]],
    *,
    unit: str = "short",
    w: int = 12,
) -> dict[str, Any]:
    return {
        "id": number,
        "type": "timeseries",
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": 8},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def quantiles(metric: str, by: str = "", scale: str = "") -> list[tuple[str, str]]:
    grouping = f"le{', ' + by if by else ''}"
    legend = f"{{{{{by}}}}} " if by else ""
    return [
        (f"histogram_quantile({q}, sum by ({grouping}) (rate({metric}_bucket[5m]))){scale}", f"{legend}p{p}")
        for q, p in ((0.5, 50), (0.9, 90), (0.99, 99))
    ]


def dashboard(
    uid: str, title: str, description: str, panels: list[dict[str, Any]], variables: list[Any]
) -> Any:
    return {
        "uid": uid,
        "title": title,
        "tags": ["phalanx", "volcano"],
        "description": description,
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "timezone": "browser",
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
                *variables,
            ]
        },
        "annotations": {"list": []},
        "panels": panels,
    }


def queue_variable() -> dict[str, Any]:
    return {
        "name": "queue",
        "type": "query",
        "label": "Queue",
        "datasource": DATASOURCE,
        "query": {"query": "label_values(volcano_queue_weight, queue_name)", "refId": "queues"},
        "definition": "label_values(volcano_queue_weight, queue_name)",
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "refresh": 2,
        "current": {"text": "All", "value": "$__all"},
    }


def jobs() -> Any:
    q = '{queue=~"$queue"}'
    panels = [
        panel(
            1,
            "Wait: creation to first bind (ms)",
            0,
            0,
            quantiles("volcano_e2e_job_scheduling_latency_milliseconds"),
            unit="ms",
        ),
        panel(
            2,
            "Per job: creation to last bind (ms), longest 10",
            12,
            0,
            [(f"topk(10, volcano_e2e_job_scheduling_duration{q})", "{{job_namespace}}/{{job_name}}")],
            unit="ms",
        ),
        panel(
            3,
            "Jobs waiting, and members they miss",
            0,
            8,
            [
                ("volcano_unschedule_job_count", "jobs waiting"),
                ("topk(10, volcano_unschedule_task_count)", "{{job_id}} missing members"),
            ],
        ),
        panel(
            4,
            "Schedule attempts by result (pods/s)",
            12,
            8,
            [("sum by (result) (rate(volcano_schedule_attempts_total[5m]))", "{{result}}")],
        ),
        panel(
            5,
            "Partial-gang guard: underfilled gangs, refused decisions",
            0,
            16,
            [
                ("phalanx_scheduler_underfilled_gangs", "gangs below their minimum"),
                (
                    "sum by (reason) (rate(phalanx_controller_decisions_refused_total[5m]))",
                    "refused: {{reason}}",
                ),
            ],
        ),
        panel(
            6,
            "Jobs finished per queue (per hour)",
            12,
            16,
            [
                (
                    "sum by (queue_name)"
                    ' (increase(volcano_job_completed_phase_count{queue_name=~"$queue"}[1h]))',
                    "{{queue_name}} completed",
                ),
                (
                    "sum by (queue_name)"
                    ' (increase(volcano_job_failed_phase_count{queue_name=~"$queue"}[1h]))',
                    "{{queue_name}} failed",
                ),
            ],
        ),
        panel(
            7,
            "Job to pod creation (ms)",
            0,
            24,
            quantiles("volcano_controller_job_to_pod_creation_latency_milliseconds"),
            unit="ms",
        ),
        panel(
            8,
            "Preemption: attempts and victims",
            12,
            24,
            [
                ("rate(volcano_total_preemption_attempts[5m])", "attempts/s"),
                ("volcano_pod_preemption_victims", "victims of the last preemption"),
            ],
        ),
        panel(
            9,
            "PodGroups per phase",
            0,
            32,
            [
                (f'sum(volcano_queue_pod_group_{phase}_count{{queue_name=~"$queue"}})', phase)
                for phase in ("pending", "inqueue", "running", "unknown", "completed")
            ],
            w=24,
        ),
    ]
    return dashboard(
        "phalanx-jobs",
        "Phalanx / Volcano jobs",
        "How long jobs wait to be placed, which wait and why, and the guard against partly bound gangs.",
        panels,
        [queue_variable()],
    )


def system() -> Any:
    panels = [
        panel(
            1,
            "Scheduling cycle (s)",
            0,
            0,
            [
                *quantiles("phalanx_scheduler_cycle_seconds"),
                (
                    "histogram_quantile(0.9, sum by (le, phase)"
                    " (rate(phalanx_scheduler_cycle_phase_seconds_bucket[5m])))",
                    "p90 {{phase}}",
                ),
            ],
            unit="s",
        ),
        panel(
            2,
            "Seconds since the last cycle; leader",
            12,
            0,
            [
                ("time() - max(phalanx_scheduler_last_cycle_timestamp_seconds)", "since the last cycle"),
                ("sum(phalanx_scheduler_leader)", "leaders"),
                (
                    "sum by (change) (increase(phalanx_scheduler_leadership_changes_total[15m]))",
                    "{{change}} in 15m",
                ),
            ],
        ),
        panel(
            3,
            "Consumer lag (messages waiting)",
            0,
            8,
            [
                ("phalanx_bus_consumer_pending", "{{durable}}"),
                ("phalanx_bus_consumer_unhealthy", "{{durable}} unhealthy"),
            ],
        ),
        panel(
            4,
            "Consumers: handled, redelivered, dead-lettered (per s)",
            12,
            8,
            [
                ("sum by (durable) (rate(phalanx_consumer_handled_total[5m]))", "{{durable}} handled"),
                (
                    "sum by (durable) (rate(phalanx_consumer_redeliveries_total[5m]))",
                    "{{durable}} redelivered",
                ),
                (
                    "sum by (durable) (rate(phalanx_consumer_dead_letters_total[5m]))",
                    "{{durable}} dead-lettered",
                ),
            ],
        ),
        panel(
            5,
            "Outbox: rows waiting and the oldest's age",
            0,
            16,
            [
                ("phalanx_outbox_depth", "{{table}} rows"),
                ("phalanx_outbox_oldest_age_seconds", "{{table}} oldest (s)"),
            ],
        ),
        panel(
            6,
            "Kubernetes API latency by verb (p99, s)",
            12,
            16,
            [
                (
                    "histogram_quantile(0.99, sum by (le, verb)"
                    " (rate(phalanx_kube_api_request_duration_seconds_bucket[5m])))",
                    "{{verb}}",
                )
            ],
            unit="s",
        ),
        panel(
            7,
            "Kubernetes API errors (per s)",
            0,
            24,
            [
                (
                    "sum by (verb, resource, code) (rate(phalanx_kube_api_request_errors_total[5m]))",
                    "{{verb}} {{resource}} {{code}}",
                )
            ],
        ),
        panel(
            8,
            "Watcher: relists, watch restarts, failures in a row",
            12,
            24,
            [
                (
                    "sum by (kind, reason) (increase(phalanx_watcher_relists_total[1h]))",
                    "{{kind}} relists ({{reason}})",
                ),
                ("sum by (kind) (rate(phalanx_watcher_watch_restarts_total[5m]))", "{{kind}} restarts/s"),
                ("phalanx_watcher_watch_failures", "{{kind}} failures"),
            ],
        ),
        panel(
            9,
            "Admission review latency (s)",
            0,
            32,
            quantiles("phalanx_admission_review_seconds", by="webhook"),
            unit="s",
        ),
        panel(
            10,
            "Admission reviews by answer (per s)",
            12,
            32,
            [
                (
                    "sum by (webhook, allowed) (rate(phalanx_admission_reviews_total[5m]))",
                    "{{webhook}} allowed={{allowed}}",
                )
            ],
        ),
    ]
    return dashboard(
        "phalanx-system",
        "Phalanx / system",
        "The services behind the scheduler: cycles, leadership, the bus, the outbox, the"
        " Kubernetes API, the watcher and admission.",
        panels,
        [],
    )


def render() -> dict[str, str]:
    return {
        name: json.dumps(board, indent=2) + "\n"
        for name, board in (("jobs.json", jobs()), ("system.json", system()))
    }


if __name__ == "__main__":
    for name, text in render().items():
        (OUT / name).write_text(text)
        print(f"wrote {OUT / name}")
