"""Admission webhooks called over HTTPS as kube-apiserver calls them, seen through the client."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.integration

JOB = ("batch.volcano.sh", "v1alpha1")
SERVICE_HOST = "webhook.test-system.svc"


def self_signed_certificate() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-webhook")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName(SERVICE_HOST)]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


class WebhookServer:
    """Answers /mutate (adds a label), /deny (refuses), /slow (answers after 2 s), /allow, over
    keep-alive connections; /drop-reused closes a reused connection without answering, as a
    server does whose keep-alive ran out just as the client sent on it."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        certificate, key = self_signed_certificate()
        self.ca_bundle = base64.b64encode(certificate).decode()
        reviews = self.reviews

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            served = 0  # requests answered on this connection

            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/drop-reused" and self.served:
                    self.close_connection = True
                    return
                self.served += 1
                reviews.append({"path": self.path, **review["request"]})
                response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
                if self.path == "/mutate":
                    patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated-by": "webhook"}}]
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
                elif self.path == "/deny":
                    response = {
                        "uid": review["request"]["uid"],
                        "allowed": False,
                        "status": {"code": 400, "message": "the queue is closed"},
                    }
                elif self.path == "/slow":
                    time.sleep(2)
                body = json.dumps(
                    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        with tempfile.TemporaryDirectory() as directory:
            cert_file, key_file = Path(directory) / "cert.pem", Path(directory) / "key.pem"
            cert_file.write_bytes(certificate)
            key_file.write_bytes(key)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert_file, key_file)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()  # the listening socket: shutdown only stops serving


@pytest.fixture(scope="module")
def webhook_server() -> Iterator[WebhookServer]:
    server = WebhookServer()
    yield server
    server.close()


@pytest.fixture
def admission(api_client: client.ApiClient) -> Iterator[client.AdmissionregistrationV1Api]:
    api = client.AdmissionregistrationV1Api(api_client)
    yield api
    for configuration in api.list_mutating_webhook_configuration().items:
        api.delete_mutating_webhook_configuration(configuration.metadata.name)
    for configuration in api.list_validating_webhook_configuration().items:
        api.delete_validating_webhook_configuration(configuration.metadata.name)


def webhook(name: str, client_config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": client_config,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["batch.volcano.sh"],
                "apiVersions": ["v1alpha1"],
                "resources": ["jobs"],
            }
        ],
        **extra,
    }


def configuration(name: str, *webhooks: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "webhooks": list(webhooks)}


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "tasks": []},
    }


def create_job(custom: client.CustomObjectsApi, name: str, namespace: str = "default") -> dict:
    return custom.create_namespaced_custom_object(*JOB, namespace, "jobs", job(name))


def test_mutating_webhook_patch_is_applied(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    admission.create_mutating_webhook_configuration(
        configuration(
            "m",
            webhook(
                "mutate.test", {"url": webhook_server.url("/mutate"), "caBundle": webhook_server.ca_bundle}
            ),
        )
    )
    created = create_job(custom, "mutated")
    assert created["metadata"]["labels"] == {"mutated-by": "webhook"}
    review = webhook_server.reviews[-1]
    assert (review["path"], review["operation"], review["kind"]["kind"]) == ("/mutate", "CREATE", "Job")
    assert review["object"]["metadata"]["name"] == "mutated"


def test_validating_webhook_denial_is_returned_as_the_apiserver_words_it(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    admission.create_validating_webhook_configuration(
        configuration(
            "v",
            webhook("deny.test", {"url": webhook_server.url("/deny"), "caBundle": webhook_server.ca_bundle}),
        )
    )
    with pytest.raises(ApiException) as raised:
        create_job(custom, "denied")
    assert raised.value.status == 400
    assert json.loads(raised.value.body)["message"] == (
        'admission webhook "deny.test" denied the request: the queue is closed'
    )


@pytest.mark.parametrize(("policy", "allowed"), [("Fail", False), ("Ignore", True)], ids=["fail", "ignore"])
def test_unreachable_webhook_follows_its_failure_policy(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    policy: str,
    allowed: bool,
) -> None:
    admission.create_validating_webhook_configuration(
        configuration(
            "gone", webhook("gone.test", {"url": "https://127.0.0.1:1/validate"}, failurePolicy=policy)
        )
    )
    name = f"unreachable-{policy.lower()}"
    if allowed:
        assert create_job(custom, name)["metadata"]["name"] == name
        return
    with pytest.raises(ApiException) as raised:
        create_job(custom, name)
    assert raised.value.status == 500
    assert json.loads(raised.value.body)["message"].startswith(
        'Internal error occurred: failed calling webhook "gone.test": failed to call webhook: Post'
    )


def test_a_webhook_slower_than_its_timeout_fails_the_request(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    admission.create_validating_webhook_configuration(
        configuration(
            "slow",
            webhook(
                "slow.test",
                {"url": webhook_server.url("/slow"), "caBundle": webhook_server.ca_bundle},
                timeoutSeconds=1,
            ),
        )
    )
    with pytest.raises(ApiException) as raised:
        create_job(custom, "too-slow")
    assert raised.value.status == 500
    assert "context deadline exceeded" in json.loads(raised.value.body)["message"]


def test_a_certificate_not_matching_the_ca_bundle_is_a_call_failure(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    other_ca = base64.b64encode(self_signed_certificate()[0]).decode()
    admission.create_validating_webhook_configuration(
        configuration(
            "wrong-ca", webhook("wrong-ca.test", {"url": webhook_server.url("/allow"), "caBundle": other_ca})
        )
    )
    with pytest.raises(ApiException) as raised:
        create_job(custom, "untrusted")
    assert raised.value.status == 500


def test_namespace_selector_and_service_reference(
    admission: client.AdmissionregistrationV1Api,
    core: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    core.create_namespace({"metadata": {"name": "guarded", "labels": {"admission": "on"}}})
    service = {"namespace": "test-system", "name": "webhook", "port": webhook_server.port, "path": "/deny"}
    admission.create_validating_webhook_configuration(
        configuration(
            "selective",
            webhook(
                "selective.test",
                {"service": service, "caBundle": webhook_server.ca_bundle},
                namespaceSelector={"matchLabels": {"admission": "on"}},
            ),
        )
    )
    assert create_job(custom, "free")["metadata"]["name"] == "free"
    with pytest.raises(ApiException) as raised:
        create_job(custom, "guarded-job", "guarded")
    assert "the queue is closed" in json.loads(raised.value.body)["message"]


def test_updates_are_sent_with_the_old_object(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    create_job(custom, "updated")
    admission.create_validating_webhook_configuration(
        configuration(
            "upd",
            webhook(
                "allow.test", {"url": webhook_server.url("/allow"), "caBundle": webhook_server.ca_bundle}
            ),
        )
    )
    custom.patch_namespaced_custom_object(*JOB, "default", "jobs", "updated", {"spec": {"minAvailable": 2}})
    review = webhook_server.reviews[-1]
    assert review["operation"] == "UPDATE"
    assert review["oldObject"]["spec"]["minAvailable"] == 1
    assert review["object"]["spec"]["minAvailable"] == 2


def test_a_webhook_call_on_a_connection_the_server_closed_is_retried(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    url = webhook_server.url("/drop-reused")
    admission.create_validating_webhook_configuration(
        configuration(
            "keepalive",
            webhook("reused.test", {"url": url, "caBundle": webhook_server.ca_bundle}, failurePolicy="Fail"),
        )
    )
    # The second and third creates go out on the kept-alive connection, which the webhook drops:
    # kube-apiserver retries such a connection-level failure on a new connection, and so must we.
    for name in ("first", "second", "third"):
        assert create_job(custom, f"keepalive-{name}")["metadata"]["name"] == f"keepalive-{name}"


def test_a_dry_run_tells_webhooks_and_fails_at_one_with_side_effects(
    admission: client.AdmissionregistrationV1Api,
    custom: client.CustomObjectsApi,
    webhook_server: WebhookServer,
) -> None:
    """https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#side-effects:
    a dry run reaches webhooks with dryRun: true, and a webhook that may have side effects fails it."""
    target = {"url": webhook_server.url("/mutate"), "caBundle": webhook_server.ca_bundle}
    admission.create_mutating_webhook_configuration(configuration("m", webhook("mutate.test", target)))

    answer = custom.create_namespaced_custom_object(*JOB, "default", "jobs", job("dry"), dry_run="All")
    assert answer["metadata"]["labels"] == {"mutated-by": "webhook"}
    assert webhook_server.reviews[-1]["dryRun"] is True
    admission.create_validating_webhook_configuration(
        configuration("v", webhook("effects.test", target, sideEffects="Some"))
    )
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(*JOB, "default", "jobs", job("dry"), dry_run="All")
    assert refused.value.status == 400
    assert "does not support dry run" in json.loads(refused.value.body)["message"]
