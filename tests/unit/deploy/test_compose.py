"""docker-compose.yml is a valid Compose file and starts the stack in an order that works.

No Docker engine is needed: the file is validated against the Compose Specification's JSON schema as
shipped inside the check-jsonschema package (no network), then the semantics compose itself does not
check are asserted: dependencies exist and can become healthy or complete, every Phalanx service is
the same image with its own settings prefix, and the kubeconfig reaches the services that need it.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
import yaml

from shared.bus import permissions
from shared.infra import nats_auth
from tests.unit.deploy.health_server import health_server
from tests.unit.deploy.rendering import REPO, SERVICES, database_role, nats_user

pytestmark = pytest.mark.unit

PHALANX = (*SERVICES, "simulator", "migrate", "streams", "nats-certs")
LONG_RUNNING = (*SERVICES, "simulator")
KUBE_CLIENTS = ("watcher", "controller", "admission")


@functools.cache
def compose_schema() -> dict[str, Any]:
    vendored = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema: dict[str, Any] = json.loads((vendored / "compose-spec.json").read_text())
    return schema


def compose() -> dict[str, Any]:
    # PyYAML resolves the `<<:` merge keys the file uses, as compose does.
    document: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return document


def schema_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(compose_schema())
    return sorted(f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document))


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]  # type: ignore[no-any-return]


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    return {name: spec["condition"] for name, spec in service.get("depends_on", {}).items()}


def test_the_schema_is_the_compose_specification() -> None:
    assert compose_schema()["title"] == "Compose Specification"


def test_compose_file_matches_the_compose_specification() -> None:
    assert schema_errors(compose()) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("services", "watcher", "depends_on", "streams", "condition"), "service_healty"),
        (("services", "nats", "healthcheck", "interval"), 5),
        (("services", "postgres", "restart"), ["always"]),
        (("services", "scheduler", "enviroment"), {"A": "b"}),
    ],
    ids=["misspelt-condition", "interval-not-duration", "restart-not-string", "unknown-key"],
)
def test_the_schema_catches_mistakes(path: tuple[str, ...], value: Any) -> None:
    broken = copy.deepcopy(compose())
    node = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert schema_errors(broken) != []


def test_every_dependency_is_a_defined_service() -> None:
    defined = set(services())
    for name, service in services().items():
        assert set(depends_on(service)) <= defined, name


def test_health_conditions_target_services_with_a_healthcheck() -> None:
    for name, service in services().items():
        for target, condition in depends_on(service).items():
            if condition == "service_healthy":
                check = services()[target].get("healthcheck", {})
                assert check.get("test"), f"{name} -> {target}"
                assert not check.get("disable"), f"{name} -> {target}"


def test_completion_conditions_target_one_shot_services() -> None:
    for name, service in services().items():
        for target, condition in depends_on(service).items():
            if condition == "service_completed_successfully":
                assert services()[target]["restart"] == "no", f"{name} -> {target}"


@pytest.mark.parametrize("name", SERVICES)
def test_services_wait_for_the_streams_and_the_migrated_schema(name: str) -> None:
    conditions = depends_on(services()[name])
    assert conditions["streams"] == "service_completed_successfully"
    assert conditions["migrate"] == "service_completed_successfully"
    assert depends_on(services()["streams"]) == {"nats": "service_healthy"}


def test_migration_waits_for_a_healthy_postgres() -> None:
    migrate = services()["migrate"]
    assert depends_on(migrate) == {"postgres": "service_healthy"}
    assert migrate["command"][:3] == ["python", "-m", "alembic"]
    assert migrate["command"][-2:] == ["upgrade", "head"]
    assert migrate["environment"]["PHALANX_DATABASE_URL"].startswith("postgresql+asyncpg://")


def test_every_phalanx_container_is_the_same_image_and_build() -> None:
    builds = {json.dumps(services()[name].get("build"), sort_keys=True) for name in PHALANX}
    images = {services()[name]["image"] for name in PHALANX}
    assert len(builds) == 1
    assert len(images) == 1
    assert services()["scheduler"]["build"]["dockerfile"] == "Dockerfile"


@pytest.mark.parametrize("name", SERVICES)
def test_service_runs_its_module_with_its_own_settings_prefix(name: str) -> None:
    service = services()[name]
    assert service["command"] == ["python", "-m", f"services.{name}"]
    prefix = name.upper() + "_"
    assert all(variable.startswith(prefix) for variable in service["environment"])
    # The bundled servers by default; a NATS cluster or a PostgreSQL with replicas by variable.
    nats_url = service["environment"][f"{prefix}NATS__URL"]
    assert nats_url == "${PHALANX_NATS_SERVERS:-tls://nats:4222}"
    postgres_url = service["environment"][f"{prefix}POSTGRES__URL"]
    assert "@${PHALANX_POSTGRES_LOCATION:-postgres:5432/phalanx}" in postgres_url


@pytest.mark.parametrize("name", SERVICES)
def test_service_connects_as_itself_over_tls(name: str) -> None:
    service = services()[name]
    env = service["environment"]
    prefix = name.upper() + "_"
    assert env[f"{prefix}NATS__USER"] == nats_user(name)
    assert env[f"{prefix}NATS__PASSWORD"].startswith(f"${{NATS_{nats_user(name).upper()}_PASSWORD:-")
    assert env[f"{prefix}NATS__MANAGE_STREAMS"] == "false"
    assert env[f"{prefix}NATS__TLS_CA_FILE"] == "/certs/ca.crt"
    assert "natscerts:/certs:ro" in service["volumes"]
    assert env[f"{prefix}POSTGRES__URL"].startswith(f"postgresql+asyncpg://phalanx_{database_role(name)}:")


def test_nats_enforces_the_generated_permissions_over_tls() -> None:
    nats = services()["nats"]
    assert nats["command"][nats["command"].index("-c") + 1] == "/etc/nats/nats.conf"
    assert "./deploy/nats/nats.conf:/etc/nats/nats.conf:ro" in nats["volumes"]
    assert "--tls" in nats["command"]
    assert (REPO / "deploy" / "nats" / "nats.conf").read_text() == nats_auth.render(), (
        "regenerate: python -m shared.infra.nats_auth > deploy/nats/nats.conf"
    )
    for role in permissions.ROLES:
        assert nats_auth.password_variable(role) in nats["environment"]


def test_migrations_run_as_the_owner_role_that_postgres_creates() -> None:
    migrate = services()["migrate"]
    assert migrate["environment"]["PHALANX_DATABASE_URL"].startswith("postgresql+asyncpg://phalanx_migrator:")
    init = services()["postgres"]["volumes"][1]
    assert init.startswith("./deploy/postgres/roles.sh:/docker-entrypoint-initdb.d/")
    script = (REPO / "deploy" / "postgres" / "roles.sh").read_text()
    for role in ("migrator", "scheduler", "controller", "admission", "watcher", "reader"):
        assert f"CREATE ROLE phalanx_{role} LOGIN" in script


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_long_running_services_restart_and_check_healthz_without_curl(name: str) -> None:
    service = services()[name]
    assert service["restart"] in ("unless-stopped", "always", "on-failure")
    test = service["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    assert "urllib.request" in test[3]
    port = service.get("environment", {}).get(f"{name.upper()}_HEALTH_PORT", "8080")
    assert f":{port}/healthz" in test[3]


def test_nats_runs_jetstream_with_a_monitor_healthcheck() -> None:
    nats = services()["nats"]
    assert nats["image"].startswith("nats:2.10")
    assert "-js" in nats["command"]
    assert nats["command"][nats["command"].index("-m") + 1] == "8222"
    assert "8222/healthz?js-enabled-only=true" in " ".join(nats["healthcheck"]["test"])


def test_postgres_checks_readiness_and_keeps_its_data_in_a_named_volume() -> None:
    postgres = services()["postgres"]
    assert postgres["image"].startswith("postgres:16")
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in compose()["volumes"]


def test_simulator_kubeconfig_reaches_the_kubernetes_clients_read_only() -> None:
    simulator = services()["simulator"]
    written = simulator["command"][simulator["command"].index("--kubeconfig") + 1]
    host = simulator["command"][simulator["command"].index("--host") + 1]
    assert host == "simulator", "the kubeconfig names the bind address; it must resolve from peers"
    [volume] = [v for v in simulator["volumes"] if v.startswith("kubeconfig:")]
    mount = volume.split(":")[1]
    assert written.startswith(mount + "/")
    for name in KUBE_CLIENTS:
        service = services()[name]
        assert f"kubeconfig:{mount}:ro" in service["volumes"]
        assert service["environment"][f"{name.upper()}_KUBECONFIG"] == written
        assert depends_on(service)["simulator"] == "service_healthy"


def test_scheduler_gets_no_kubeconfig() -> None:
    scheduler = services()["scheduler"]
    assert "simulator" not in depends_on(scheduler)
    assert not [volume for volume in scheduler.get("volumes", []) if volume.startswith("kubeconfig")]
    assert not [v for v in scheduler["environment"] if "KUBECONFIG" in v]


def test_admission_serves_https_on_8443() -> None:
    assert services()["admission"]["environment"]["ADMISSION_PORT"] == "8443"


def test_named_volumes_are_declared() -> None:
    declared = set(compose()["volumes"])
    for name, service in services().items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith(("/", ".", "$")):
                assert source in declared, f"{name}: {source}"


@pytest.mark.parametrize(
    ("status", "healthy"),
    [(200, True), (503, False), (None, False)],
    ids=["answers-200", "answers-503", "nothing-listening"],
)
def test_the_service_healthcheck_command_tells_healthy_from_not(status: int | None, healthy: bool) -> None:
    script = services()["scheduler"]["healthcheck"]["test"][3]
    if status is None:
        with health_server(200) as port:
            pass  # the port is free again: a connection is refused
        result = _run_check(script.replace(":8080/", f":{port}/"))
    else:
        with health_server(status) as port:
            result = _run_check(script.replace(":8080/", f":{port}/"))
    assert (result.returncode == 0) is healthy, result.stderr


def _run_check(script: str) -> subprocess.CompletedProcess[str]:
    # The image's python runs the check; the test's interpreter is the same stdlib.
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
