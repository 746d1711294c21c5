"""Job plugin outputs: env vars, hosts files, Service/ConfigMap/NetworkPolicy/Secret shapes,
and the pytorch, tensorflow and mpi framework variables."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from services.controller.core.plugins import plugin_object_names, plugin_objects
from services.controller.core.plugins.args import parse_flags
from services.controller.core.plugins.ssh import KeyPair, secret_conflict
from services.controller.core.plugins.sshkeys import generate_key_pair
from services.controller.core.pods import build_pod

from .manifests import env_of, job, task

pytestmark = pytest.mark.unit

KEYS = KeyPair("-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n", "ssh-rsa AAAA test\n")
JOB_REF = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "tf",
    "uid": "u-123",
    "controller": True,
    "blockOwnerDeletion": True,
}


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in objects}


# ---- env -----------------------------------------------------------------------------------


def test_env_plugin_sets_both_index_variables_on_all_containers() -> None:
    t = task("worker", 3, initContainers=[{"name": "init", "image": "busybox"}])
    pod = build_pod(job(t, plugins={"env": []}), 0, 2)
    for env in (env_of(pod), env_of(pod, init=True)):
        assert env["VK_TASK_INDEX"] == env["VC_TASK_INDEX"] == "2"


# ---- svc -----------------------------------------------------------------------------------


def test_svc_hosts_configmap_contents() -> None:
    j = job(task("ps", 2), task("worker-gpu", 3), plugins={"svc": []})
    cm = _by_kind(plugin_objects(j))["ConfigMap"]
    assert cm["metadata"] == {"name": "tf-svc", "namespace": "team-a", "ownerReferences": [JOB_REF]}
    assert cm["data"] == {
        "ps.host": "tf-ps-0.tf\ntf-ps-1.tf",
        "VC_PS_HOSTS": "tf-ps-0.tf,tf-ps-1.tf",
        "VC_PS_NUM": "2",
        "worker_gpu.host": "tf-worker-gpu-0.tf\ntf-worker-gpu-1.tf\ntf-worker-gpu-2.tf",
        "VC_WORKER_GPU_HOSTS": "tf-worker-gpu-0.tf,tf-worker-gpu-1.tf,tf-worker-gpu-2.tf",
        "VC_WORKER_GPU_NUM": "3",
    }


def test_svc_template_hostname_names_a_single_host() -> None:
    j = job(task("master", 2, hostname="head", subdomain="cluster"), plugins={"svc": []})
    data = _by_kind(plugin_objects(j))["ConfigMap"]["data"]
    assert data["master.host"] == "head.cluster"
    assert data["VC_MASTER_NUM"] == "1"


def test_svc_service_and_network_policy_shapes() -> None:
    objects = _by_kind(plugin_objects(job(task("worker", 2), plugins={"svc": []})))
    selector = {"volcano.sh/job-name": "tf", "volcano.sh/job-namespace": "team-a"}
    service = objects["Service"]
    assert service["metadata"]["name"] == "tf"
    assert service["metadata"]["ownerReferences"] == [JOB_REF]
    assert service["spec"] == {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": False}
    policy = objects["NetworkPolicy"]
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["metadata"]["name"] == "tf"
    assert policy["spec"] == {
        "podSelector": {"matchLabels": selector},
        "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
        "policyTypes": ["Ingress"],
    }


def test_svc_flags() -> None:
    j = job(
        task("worker", 2), plugins={"svc": ["--disable-network-policy=true", "--publish-not-ready-addresses"]}
    )
    objects = _by_kind(plugin_objects(j))
    assert "NetworkPolicy" not in objects
    assert objects["Service"]["spec"]["publishNotReadyAddresses"] is True


def test_svc_pod_gets_hostname_env_and_hosts_mount() -> None:
    pod = build_pod(job(task("ps", 1), task("worker", 2), plugins={"svc": []}), 1, 1)
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("tf-worker-1", "tf")
    env = env_of(pod)
    assert env["VC_WORKER_HOSTS"] == {"configMapKeyRef": {"name": "tf-svc", "key": "VC_WORKER_HOSTS"}}
    assert set(env) == {"VC_PS_HOSTS", "VC_PS_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM"}
    assert {"name": "tf-svc", "configMap": {"name": "tf-svc"}} in pod["spec"]["volumes"]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [{"mountPath": "/etc/volcano", "name": "tf-svc"}]


def test_svc_can_skip_hosts_env() -> None:
    pod = build_pod(job(task("worker", 2), plugins={"svc": ["--inject-hosts-env=false"]}), 0, 0)
    assert env_of(pod) == {}


# ---- ssh -----------------------------------------------------------------------------------


def _secret_files(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_ssh_secret_shape() -> None:
    j = job(task("master", 1), task("worker", 2), plugins={"ssh": []})
    secret = _by_kind(plugin_objects(j, ssh_keys=KEYS))["Secret"]
    assert secret["metadata"] == {"name": "tf-ssh", "namespace": "team-a", "ownerReferences": [JOB_REF]}
    files = _secret_files(secret)
    assert files["id_rsa"] == KEYS.private_pem
    assert files["id_rsa.pub"] == files["authorized_keys"] == KEYS.public_openssh
    assert files["config"] == (
        "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
        "Host tf-master-0\n  HostName tf-master-0.tf\n  Port 22\n"
        "Host tf-worker-0\n  HostName tf-worker-0.tf\n  Port 22\n"
        "Host tf-worker-1\n  HostName tf-worker-1.tf\n  Port 22\n"
    )


def test_ssh_user_keys_and_port() -> None:
    j = job(
        task("worker", 1),
        plugins={"ssh": ["--ssh-private-key=PRIV", "--ssh-public-key=PUB", "--ssh-port=2222"]},
    )
    files = _secret_files(plugin_objects(j)[0])
    assert (files["id_rsa"], files["authorized_keys"]) == ("PRIV", "PUB")
    assert "  Port 2222\n" in files["config"]


def test_ssh_invalid_port_falls_back_to_22() -> None:
    j = job(task("worker", 1), plugins={"ssh": ["--ssh-port=70000"]})
    assert "  Port 22\n" in _secret_files(plugin_objects(j, ssh_keys=KEYS)[0])["config"]


def test_ssh_without_keys_is_an_error_not_a_random_secret() -> None:
    with pytest.raises(ValueError, match="key pair"):
        plugin_objects(job(task("worker", 1), plugins={"ssh": []}))


@pytest.mark.parametrize(
    ("args", "path", "mode"),
    [([], "/root/.ssh", 0o600), (["--ssh-key-file-path=/home/user/.ssh"], "/home/user/.ssh", 0o644)],
    ids=["root", "non-root-path"],
)
def test_ssh_mount(args: list[str], path: str, mode: int) -> None:
    t = task("worker", 1, initContainers=[{"name": "init", "image": "busybox"}])
    pod = build_pod(job(t, plugins={"ssh": args}), 0, 0)
    volume = pod["spec"]["volumes"][0]
    assert volume["secret"]["secretName"] == "tf-ssh"
    assert volume["secret"]["defaultMode"] == mode
    assert [i["path"] for i in volume["secret"]["items"]] == [
        ".ssh/id_rsa",
        ".ssh/id_rsa.pub",
        ".ssh/authorized_keys",
        ".ssh/config",
    ]
    mount = {"mountPath": path, "subPath": ".ssh", "name": "tf-ssh"}
    assert pod["spec"]["containers"][0]["volumeMounts"] == [mount]
    assert pod["spec"]["initContainers"][0]["volumeMounts"] == [mount]


@pytest.mark.parametrize(
    ("existing", "conflict"),
    [
        (None, False),
        ({"metadata": {"name": "tf-ssh", "ownerReferences": [JOB_REF]}}, False),
        ({"metadata": {"name": "tf-ssh"}}, True),
        ({"metadata": {"name": "tf-ssh", "ownerReferences": [{**JOB_REF, "uid": "old-job"}]}}, True),
    ],
    ids=["absent", "ours", "user-secret", "previous-job-with-same-name"],
)
def test_ssh_never_takes_over_a_secret_it_does_not_own(
    existing: dict[str, Any] | None, conflict: bool
) -> None:
    assert (secret_conflict(existing, job(task("w", 1))) is not None) == conflict


def test_generated_key_pair_is_pem_and_openssh() -> None:
    keys = generate_key_pair(bits=1024)
    assert keys.private_pem.startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert keys.public_openssh.startswith("ssh-rsa ")
    assert keys.public_openssh.endswith("\n")


# ---- pytorch -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_index", "pod_index", "rank"),
    [(0, 0, "0"), (1, 0, "1"), (1, 2, "3")],
    ids=["master", "worker-0", "worker-2"],
)
def test_pytorch_rendezvous_env(task_index: int, pod_index: int, rank: str) -> None:
    j = job(task("master", 1), task("worker", 3), plugins={"pytorch": ["--port=29500"]})
    pod = build_pod(j, task_index, pod_index)
    assert env_of(pod) == {
        "MASTER_ADDR": "tf-master-0.tf",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "4",
        "RANK": rank,
    }
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 29500}]


def test_pytorch_other_tasks_get_no_rank_and_missing_master_is_a_no_op() -> None:
    j = job(task("master", 1), task("worker", 1), task("evaluator", 1), plugins={"pytorch": []})
    assert "RANK" not in env_of(build_pod(j, 2, 0))
    assert env_of(build_pod(job(task("worker", 2), plugins={"pytorch": []}), 0, 0)) == {}


def test_pytorch_wait_for_master_init_container() -> None:
    j = job(
        task("master", 1),
        task("worker", 1),
        plugins={"pytorch": ["--wait-master-enabled=true", "--wait-master-timeout=60"]},
    )
    worker, master = build_pod(j, 1, 0), build_pod(j, 0, 0)
    init = worker["spec"]["initContainers"][0]
    assert (init["name"], init["image"]) == ("wait-for-master", "busybox:1.36.1")
    assert "nc -z tf-master-0.tf 23456" in init["command"][2]
    assert "TIMEOUT=60" in init["command"][2]
    assert "initContainers" not in master["spec"]


# ---- tensorflow ----------------------------------------------------------------------------


def test_tensorflow_tf_config() -> None:
    j = job(task("ps", 2), task("worker", 2), task("chief", 1), plugins={"tensorflow": []})
    config = json.loads(env_of(build_pod(j, 1, 1))["TF_CONFIG"])
    assert config == {
        "cluster": {
            "ps": ["tf-ps-0.tf:2222", "tf-ps-1.tf:2222"],
            "worker": ["tf-worker-0.tf:2222", "tf-worker-1.tf:2222"],
            "chief": ["tf-chief-0.tf:2222"],
        },
        "task": {"type": "worker", "index": 1},
    }


def test_tensorflow_custom_role_names_and_port() -> None:
    j = job(
        task("param", 1),
        task("trainer", 1),
        plugins={"tensorflow": ["--ps=param", "--worker=trainer", "--port=5000"]},
    )
    config = json.loads(env_of(build_pod(j, 0, 0))["TF_CONFIG"])
    assert config["cluster"] == {"ps": ["tf-param-0.tf:5000"], "worker": ["tf-trainer-0.tf:5000"]}
    assert config["task"] == {"type": "ps", "index": 0}


def test_tensorflow_single_pod_job_gets_nothing() -> None:
    assert env_of(build_pod(job(task("worker", 1), plugins={"tensorflow": []}), 0, 0)) == {}


# ---- mpi -----------------------------------------------------------------------------------


def test_mpi_master_gets_worker_hostfile_and_everyone_the_port() -> None:
    t = task("master", 1, initContainers=[{"name": "init", "image": "busybox"}])
    j = job(t, task("worker", 3), plugins={"mpi": [], "svc": [], "ssh": []})
    master, worker = build_pod(j, 0, 0), build_pod(j, 1, 0)
    assert env_of(master)["MPI_HOST"] == "tf-worker-0.tf,tf-worker-1.tf,tf-worker-2.tf"
    assert env_of(master, init=True)["MPI_HOST"] == env_of(master)["MPI_HOST"]
    assert "MPI_HOST" not in env_of(worker)
    port = {"name": "mpijob-port", "containerPort": 22}
    assert port in master["spec"]["containers"][0]["ports"]
    assert port in master["spec"]["initContainers"][0]["ports"]
    assert port in worker["spec"]["containers"][0]["ports"]


def test_mpi_port_already_declared_is_not_duplicated() -> None:
    t = task("worker", 2)
    t["template"]["spec"]["containers"][0]["ports"] = [{"name": "ssh", "containerPort": 22}]
    pod = build_pod(job(task("master", 1), t, plugins={"mpi": []}), 1, 0)
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "ssh", "containerPort": 22}]


# ---- argument parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"port": 22, "master": "master", "flag": False}),
        (["--port=2222", "-master=head", "--flag"], {"port": 2222, "master": "head", "flag": True}),
        (["--port", "23"], {"port": 23, "master": "master", "flag": False}),
        (["--unknown=1", "--port=99"], {"port": 22, "master": "master", "flag": False}),
        (["--port=x", "--master=m"], {"port": 22, "master": "master", "flag": False}),
    ],
    ids=["defaults", "equals-and-bool", "separate-value", "stops-at-unknown", "stops-at-bad"],
)
def test_go_flag_parsing(args: list[str], expected: dict[str, object]) -> None:
    assert parse_flags(args, {"port": 22, "master": "master", "flag": False}) == expected


def test_object_names_for_deletion_need_no_keys() -> None:
    j = job(task("worker", 1), plugins={"svc": ["--disable-network-policy"], "ssh": [], "env": []})
    assert plugin_object_names(j) == [("ConfigMap", "tf-svc"), ("Service", "tf"), ("Secret", "tf-ssh")]
    assert plugin_object_names(j, ["ssh"]) == [("Secret", "tf-ssh")]
