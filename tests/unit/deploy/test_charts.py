"""The Helm charts lint cleanly, render to valid Kubernetes objects and keep the service contract.

Every chart is linted and rendered by the Helm v4 SDK (helm-python-sdk), and every rendered object
is checked against Kubernetes' own OpenAPI schemas (kubernetes-validate) for the oldest Kubernetes
the charts claim and the newest the validator knows, with default values and with every optional
branch switched on. Then the contract the services rely on: command, environment, probes, hardening.
"""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.unit.deploy.rendering import (
    ALL_CHARTS,
    CHARTS,
    LIBRARY_CHART,
    NAMESPACE,
    SERVICE_CHARTS,
    container,
    database_role,
    env_of,
    nats_user,
    of_kind,
    only,
    render,
)

pytestmark = pytest.mark.unit

OLDEST_KUBERNETES = "1.25"
KUBERNETES_VERSIONS = (OLDEST_KUBERNETES, kubernetes_validate.latest_version())

# Values that switch on every optional branch of the templates.
EVERYTHING_ON: dict[str, dict[str, Any]] = {
    chart: {
        "nats": {"existingSecret": "phalanx-nats", "secretKey": "url", "tls": {"caSecret": "nats-ca"}},
        "extraEnv": [{"name": "EXTRA", "value": "1"}],
        "imagePullSecrets": [{"name": "registry"}],
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"example.com/a": "b"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "x"}},
                        },
                    }
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "x"}},
            }
        ],
        "serviceAccount": {"annotations": {"example.com/role": "x"}},
        "metrics": {"service": {"annotations": {"prometheus.io/scrape": "true"}}},
        "replicas": 3,
    }
    for chart in SERVICE_CHARTS
}
EVERYTHING_ON["phalanx-scheduler"]["schedulerConfig"] = {"create": True}
EVERYTHING_ON["phalanx-scheduler"]["metrics"] = {
    **EVERYTHING_ON["phalanx-scheduler"]["metrics"],
    "dashboards": {"enabled": True},
    "alertRules": {"enabled": True},
}
EVERYTHING_ON["phalanx-admission"]["tls"] = {"existingSecret": "phalanx-admission-tls"}
EVERYTHING_ON["phalanx-crds"] = {"keep": False, "labels": {"team": "batch"}}

NO_VALUES: dict[str, Any] = {}
VARIANTS = [(chart, NO_VALUES) for chart in ALL_CHARTS] + list(EVERYTHING_ON.items())
VARIANT_IDS = [f"{chart}-{'all-options' if values else 'defaults'}" for chart, values in VARIANTS]


@pytest.mark.parametrize("chart", ALL_CHARTS)
def test_chart_metadata_is_helm_v2_with_a_version(chart: str) -> None:
    meta = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())
    assert meta["apiVersion"] == "v2"
    assert meta["name"] == chart
    assert meta["type"] == "application"
    assert str(meta["version"]).count(".") == 2
    assert meta["appVersion"]
    assert isinstance(yaml.safe_load((CHARTS / chart / "values.yaml").read_text()), dict)


@pytest.mark.parametrize("chart", ALL_CHARTS)
def test_helm_lint_strict_reports_no_warning(chart: str) -> None:
    report = helm.lint(CHARTS / chart, strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize(("chart", "values"), VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("kubernetes", KUBERNETES_VERSIONS)
def test_rendered_objects_are_valid_kubernetes(chart: str, values: dict[str, Any], kubernetes: str) -> None:
    objects = render(chart, values)
    assert objects
    for obj in objects:
        assert obj["metadata"]["name"], obj
        # strict: an unknown field (a misspelt probe, a misplaced key) is an error, not ignored.
        kubernetes_validate.validate(obj, kubernetes, strict=True)


@pytest.mark.parametrize(("chart", "values"), VARIANTS, ids=VARIANT_IDS)
def test_every_object_carries_the_recommended_labels(chart: str, values: dict[str, Any]) -> None:
    for obj in render(chart, values):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == chart
        assert labels["app.kubernetes.io/part-of"] == "phalanx"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"


@pytest.mark.parametrize(("chart", "values"), VARIANTS[: len(SERVICE_CHARTS)], ids=SERVICE_CHARTS)
def test_namespaced_objects_go_to_the_release_namespace(chart: str, values: dict[str, Any]) -> None:
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
    for obj in render(chart, values):
        if obj["kind"] in cluster_scoped:
            assert "namespace" not in obj["metadata"]
        elif obj["kind"] not in ("Role", "RoleBinding", "ConfigMap"):
            assert obj["metadata"]["namespace"] == NAMESPACE


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_every_service_chart_takes_its_shared_templates_from_the_library_chart(chart: str) -> None:
    meta = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())
    assert [d["name"] for d in meta["dependencies"]] == [LIBRARY_CHART]
    # Helm renders a dependency from the chart's charts/ folder: there it is the library itself.
    assert (CHARTS / chart / "charts" / LIBRARY_CHART).resolve() == CHARTS / LIBRARY_CHART
    assert not (CHARTS / chart / "templates" / "_helpers.tpl").exists(), "helpers live in phalanx-common"


def test_the_library_chart_lints_and_renders_nothing_by_itself() -> None:
    meta = yaml.safe_load((CHARTS / LIBRARY_CHART / "Chart.yaml").read_text())
    assert meta["type"] == "library"
    report = helm.lint(CHARTS / LIBRARY_CHART, strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_deployment_runs_the_service_module(chart: str) -> None:
    service = chart.removeprefix("phalanx-")
    assert container(render(chart))["command"] == ["python", "-m", f"services.{service}"]


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_environment_follows_the_settings_contract(chart: str) -> None:
    prefix = chart.removeprefix("phalanx-").upper()
    env = env_of(render(chart))
    assert env[f"{prefix}_NATS__URL"]["value"].startswith("nats://")
    assert env[f"{prefix}_POSTGRES__URL"]["valueFrom"]["secretKeyRef"] == {
        "name": f"phalanx-postgres-{database_role(prefix.lower())}",
        "key": "url",
    }
    assert env[f"{prefix}_HEALTH_PORT"]["value"] == "8080"
    assert env[f"{prefix}_LOG__FORMAT"]["value"] == "json"
    assert all(name.startswith(prefix + "_") for name in env), sorted(env)


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_credentials_come_only_from_secrets(chart: str) -> None:
    values = {"nats": {"existingSecret": "nats-creds"}, "postgres": {"existingSecret": "pg-creds"}}
    prefix = chart.removeprefix("phalanx-").upper()
    env = env_of(render(chart, values))
    assert env[f"{prefix}_NATS__URL"]["valueFrom"]["secretKeyRef"]["name"] == "nats-creds"
    assert env[f"{prefix}_POSTGRES__URL"]["valueFrom"]["secretKeyRef"]["name"] == "pg-creds"
    assert not any("postgresql" in str(item.get("value", "")) for item in env.values())


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_a_missing_database_secret_fails_the_render_with_its_name(chart: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=r"postgres\.existingSecret"):
        render(chart, {"postgres": {"existingSecret": ""}})


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_probes_ask_healthz_and_readyz_on_the_health_port(chart: str) -> None:
    main = container(render(chart, {"healthPort": 9191}))
    ports = {port["name"]: port["containerPort"] for port in main["ports"]}
    assert ports["health"] == 9191
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    prefix = chart.removeprefix("phalanx-").upper()
    assert env_of(render(chart, {"healthPort": 9191}))[f"{prefix}_HEALTH_PORT"]["value"] == "9191"


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_pods_run_restricted(chart: str) -> None:
    objects = render(chart)
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container(objects)["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    # A read-only root needs somewhere writable for Python's tempfile.
    mounts = {m["mountPath"]: m["name"] for m in container(objects)["volumeMounts"]}
    assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == mounts["/tmp"])


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_resources_request_cpu_and_memory_and_limit_memory(chart: str) -> None:
    resources = container(render(chart))["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert resources["limits"]["memory"] == resources["requests"]["memory"]


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_image_defaults_to_the_app_version_and_can_be_pinned(chart: str) -> None:
    app_version = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())["appVersion"]
    assert container(render(chart))["image"] == f"phalanx:{app_version}"
    pinned = {"image": {"repository": "registry.example/phalanx", "tag": "1.2.3"}}
    assert container(render(chart, pinned))["image"] == "registry.example/phalanx:1.2.3"


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_services_select_the_deployment_pods_and_expose_metrics(chart: str) -> None:
    objects = render(chart)
    pod_labels = only(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    services = of_kind(objects, "Service")
    assert services
    for service in services:
        assert service["spec"]["selector"].items() <= pod_labels.items()
    metrics = [p for s in services for p in s["spec"]["ports"] if p["name"] == "metrics"]
    assert [p["targetPort"] for p in metrics] == ["health"]


@pytest.mark.parametrize(
    ("chart", "replicas", "expected_pdbs"),
    [
        ("phalanx-scheduler", None, 1),
        ("phalanx-scheduler", 1, 0),
        ("phalanx-watcher", None, 0),
        ("phalanx-watcher", 2, 1),
        ("phalanx-controller", None, 0),
        ("phalanx-admission", None, 0),
    ],
    ids=[
        "scheduler-default-leader-plus-standby",
        "scheduler-single",
        "watcher-default",
        "watcher-two",
        "controller-default",
        "admission-default",
    ],
)
def test_disruption_budget_only_with_more_than_one_replica(
    chart: str, replicas: int | None, expected_pdbs: int
) -> None:
    # A PDB over a single replica would block every node drain.
    objects = render(chart, {} if replicas is None else {"replicas": replicas})
    pdbs = of_kind(objects, "PodDisruptionBudget")
    assert len(pdbs) == expected_pdbs
    for pdb in pdbs:
        assert pdb["spec"]["maxUnavailable"] == 1


def test_scheduler_defaults_to_a_leader_and_a_standby() -> None:
    assert only(render("phalanx-scheduler"), "Deployment")["spec"]["replicas"] == 2


def test_scheduler_configuration_is_volcanos_configmap_when_asked() -> None:
    assert of_kind(render("phalanx-scheduler"), "ConfigMap") == []
    config_map = only(render("phalanx-scheduler", {"schedulerConfig": {"create": True}}), "ConfigMap")
    assert config_map["metadata"]["name"] == "volcano-scheduler-configmap"
    assert config_map["metadata"]["namespace"] == "volcano-system"
    conf = yaml.safe_load(config_map["data"]["volcano-scheduler.conf"])
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert [p["name"] for p in conf["tiers"][0]["plugins"]] == ["priority", "gang", "conformance"]


@pytest.mark.parametrize("chart", ["phalanx-watcher", "phalanx-controller", "phalanx-scheduler"])
def test_scheduler_names_default_to_volcano_and_pass_as_json(chart: str) -> None:
    variable = chart.removeprefix("phalanx-").upper() + "_SCHEDULER_NAMES"
    assert yaml.safe_load(env_of(render(chart))[variable]["value"]) == ["volcano"]
    env = env_of(render(chart, {"schedulerNames": ["volcano", "phalanx"]}))
    assert yaml.safe_load(env[variable]["value"]) == ["volcano", "phalanx"]


def test_admission_service_serves_the_webhook_on_443() -> None:
    objects = render("phalanx-admission")
    service = only(objects, "Service")
    https = next(p for p in service["spec"]["ports"] if p["name"] == "https")
    ports = {p["name"]: p["containerPort"] for p in container(objects)["ports"]}
    assert https["port"] == 443
    assert ports[https["targetPort"]] == 8443
    env = env_of(objects)
    assert env["ADMISSION_PORT"]["value"] == "8443"
    assert env["ADMISSION_SERVICE_NAME"]["value"] == service["metadata"]["name"]
    assert env["ADMISSION_SERVICE_NAMESPACE"]["value"] == NAMESPACE


def test_admission_generates_its_certificate_unless_given_a_secret() -> None:
    generated = render("phalanx-admission")
    supplied_files = ("ADMISSION_CERT_FILE", "ADMISSION_KEY_FILE", "ADMISSION_CA_FILE")
    assert not [name for name in env_of(generated) if name in supplied_files]
    # Generated certificates are written, so they must land on the writable /tmp emptyDir.
    assert env_of(generated)["ADMISSION_CERT_DIR"]["value"].startswith("/tmp/")
    assert [v["name"] for v in only(generated, "Deployment")["spec"]["template"]["spec"]["volumes"]] == [
        "tmp"
    ]

    supplied = render("phalanx-admission", {"tls": {"existingSecret": "admission-certs"}})
    env = env_of(supplied)
    volumes = only(supplied, "Deployment")["spec"]["template"]["spec"]["volumes"]
    tls = next(v for v in volumes if v["name"] == "tls")
    mount = next(m for m in container(supplied)["volumeMounts"] if m["name"] == "tls")
    assert tls["secret"]["secretName"] == "admission-certs"
    assert mount["readOnly"] is True
    for key, file in (("CERT_FILE", "tls.crt"), ("KEY_FILE", "tls.key"), ("CA_FILE", "ca.crt")):
        assert env[f"ADMISSION_{key}"]["value"] == f"{mount['mountPath']}/{file}"


def test_admission_refuses_replicas_that_would_fight_over_their_certificates() -> None:
    with pytest.raises(helm.HelmRenderError, match=r"tls\.managedSecret"):
        render("phalanx-admission", {"replicas": 2, "tls": {"managedSecret": False}})
    shared_secret = {"replicas": 2, "tls": {"existingSecret": "admission-certs"}}
    assert only(render("phalanx-admission", shared_secret), "Deployment")["spec"]["replicas"] == 2


def test_admission_replicas_share_a_managed_secret_that_only_they_may_change() -> None:
    objects = render("phalanx-admission", {"replicas": 3})
    assert only(objects, "Deployment")["spec"]["replicas"] == 3
    env = env_of(objects)
    secret = env["ADMISSION_CERT_SECRET"]["value"]
    assert env["ADMISSION_CERT_SECRET_NAMESPACE"]["value"] == NAMESPACE
    role = next(r for r in of_kind(objects, "Role") if r["metadata"]["name"].endswith("-tls"))
    assert role["metadata"]["namespace"] == NAMESPACE
    by_verbs = {tuple(rule["verbs"]): rule.get("resourceNames") for rule in role["rules"]}
    assert by_verbs == {("create",): None, ("get", "update"): [secret]}
    bindings = of_kind(objects, "RoleBinding")
    [binding] = [b for b in bindings if b["roleRef"]["name"] == role["metadata"]["name"]]
    assert (
        binding["subjects"][0]["name"]
        == only(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    )
    # A supplied Secret replaces the managed one: no Secret to write, so no right to write one.
    supplied = render("phalanx-admission", {"replicas": 3, "tls": {"existingSecret": "admission-certs"}})
    assert "ADMISSION_CERT_SECRET" not in env_of(supplied)
    assert not of_kind(supplied, "Role")


def test_the_streams_hook_asks_for_the_replicas_given() -> None:
    hook = job_named(render("phalanx-scheduler", {"bootstrap": {"streamReplicas": 3}}), "-streams")
    env = {e["name"]: e.get("value") for e in hook["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PHALANX_NATS__STREAM_REPLICAS"] == "3"


def job_named(objects: list[dict[str, Any]], suffix: str) -> dict[str, Any]:
    [job] = [o for o in of_kind(objects, "Job") if o["metadata"]["name"].endswith(suffix)]
    return job


def test_scheduler_chart_migrates_the_schema_before_install_and_upgrade() -> None:
    objects = render("phalanx-scheduler")
    job = job_named(objects, "-migrate")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "hook-succeeded" in annotations["helm.sh/hook-delete-policy"]
    pod = job["spec"]["template"]["spec"]
    [migrate] = pod["containers"]
    assert migrate["command"] == [
        "python", "-m", "alembic", "-c", "/app/alembic.ini", "upgrade", "head",
    ]  # fmt: skip
    [url] = migrate["env"]
    assert url["name"] == "PHALANX_DATABASE_URL"
    assert url["valueFrom"]["secretKeyRef"] == {"name": "phalanx-postgres-migrator", "key": "url"}
    assert pod["automountServiceAccountToken"] is False
    assert migrate["securityContext"]["readOnlyRootFilesystem"] is True
    # The Deployment's selectors must not count the migration pod as a scheduler.
    job_labels = job["spec"]["template"]["metadata"]["labels"]
    selectors = [only(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]]
    selectors += [service["spec"]["selector"] for service in of_kind(objects, "Service")]
    for selector in selectors:
        assert not selector.items() <= job_labels.items()


def test_migration_can_use_its_own_credentials_or_be_left_out() -> None:
    own = render("phalanx-scheduler", {"migrations": {"existingSecret": "phalanx-schema-owner"}})
    [url] = job_named(own, "-migrate")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert url["valueFrom"]["secretKeyRef"]["name"] == "phalanx-schema-owner"
    off = {"migrations": {"enabled": False}, "bootstrap": {"enabled": False}}
    assert of_kind(render("phalanx-scheduler", off), "Job") == []


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_each_service_is_its_own_nats_identity_that_cannot_manage_streams(chart: str) -> None:
    service = chart.removeprefix("phalanx-")
    prefix = service.upper()
    env = env_of(render(chart))
    assert env[f"{prefix}_NATS__USER"]["value"] == nats_user(service)
    assert env[f"{prefix}_NATS__PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": f"phalanx-nats-{nats_user(service)}",
        "key": "password",
    }
    assert env[f"{prefix}_NATS__MANAGE_STREAMS"]["value"] == "false"
    assert f"{prefix}_NATS__TLS_CA_FILE" not in env


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_a_nats_ca_is_mounted_where_the_service_reads_it(chart: str) -> None:
    prefix = chart.removeprefix("phalanx-").upper()
    objects = render(chart, {"nats": {"url": "tls://nats:4222", "tls": {"caSecret": "nats-ca"}}})
    ca_file = env_of(objects)[f"{prefix}_NATS__TLS_CA_FILE"]["value"]
    [mount] = [m for m in container(objects)["volumeMounts"] if m["name"] == "nats-ca"]
    assert ca_file == f"{mount['mountPath']}/ca.crt"
    volumes = only(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    [volume] = [v for v in volumes if v["name"] == "nats-ca"]
    assert volume["secret"]["secretName"] == "nats-ca"


def test_scheduler_chart_creates_the_streams_as_the_bootstrap_identity() -> None:
    job = job_named(render("phalanx-scheduler"), "-streams")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    [streams] = job["spec"]["template"]["spec"]["containers"]
    assert streams["command"] == ["python", "-m", "shared.bus.bootstrap"]
    env = {item["name"]: item for item in streams["env"]}
    assert env["PHALANX_NATS__USER"]["value"] == "bootstrap"
    assert env["PHALANX_NATS__PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "phalanx-nats-bootstrap"


@pytest.mark.parametrize(
    ("chart", "values", "named"),
    [
        ("phalanx-scheduler", {"replicas": "two"}, "/replicas"),
        ("phalanx-scheduler", {"replicaz": 2}, "replicaz"),
        ("phalanx-watcher", {"nats": {"url": "http://nats:4222"}}, "/nats/url"),
        ("phalanx-controller", {"log": {"level": "TRACE"}}, "/log/level"),
        ("phalanx-admission", {"webhook": {"port": 70000}}, "/webhook/port"),
        ("phalanx-watcher", {"schedulerNames": []}, "/schedulerNames"),
        ("phalanx-scheduler", {"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ("phalanx-crds", {"keep": "yes"}, "/keep"),
    ],
    ids=[
        "replicas-not-integer",
        "misspelt-top-level-key",
        "nats-url-not-nats",
        "unknown-log-level",
        "port-out-of-range",
        "no-scheduler-names",
        "unknown-pull-policy",
        "keep-not-boolean",
    ],
)
def test_values_schema_rejects_mistakes_naming_the_value(
    chart: str, values: dict[str, Any], named: str
) -> None:
    with pytest.raises(helm.HelmValuesError, match=named):
        render(chart, values)


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_a_network_policy_admits_only_the_health_port_to_the_services_pods(chart: str) -> None:
    objects = render(chart)
    policy = only(objects, "NetworkPolicy")
    pods = only(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pods.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ports = [rule["ports"][0]["port"] for rule in policy["spec"]["ingress"]]
    # Beyond health: the admission webhook, and the console's own (token-guarded) port.
    expected = {"phalanx-admission": [8080, 8443], "phalanx-console": [8080, 8088]}.get(chart, [8080])
    assert ports == expected
    assert of_kind(render(chart, {"networkPolicy": {"enabled": False}}), "NetworkPolicy") == []


def test_only_the_api_server_may_call_the_webhook_once_its_addresses_are_given() -> None:
    values = {"networkPolicy": {"apiServerCIDRs": ["10.0.0.1/32", "10.0.0.2/32"]}}
    policy = only(render("phalanx-admission", values), "NetworkPolicy")
    [health, webhook] = policy["spec"]["ingress"]
    assert webhook["ports"] == [{"port": 8443, "protocol": "TCP"}]
    assert webhook["from"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}, {"ipBlock": {"cidr": "10.0.0.2/32"}}]
    assert "from" not in health


@pytest.mark.parametrize("chart", SERVICE_CHARTS)
def test_in_a_pod_the_health_port_listens_on_every_address_for_the_kubelet(chart: str) -> None:
    prefix = chart.removeprefix("phalanx-").upper()
    assert env_of(render(chart))[f"{prefix}_HEALTH_HOST"]["value"] == "0.0.0.0"


def test_the_webhook_listens_on_every_address_of_its_pod() -> None:
    assert env_of(render("phalanx-admission"))["ADMISSION_HOST"]["value"] == "0.0.0.0"
