"""Shell: the Kubernetes API as vcctl reaches it — a kubeconfig, Volcano's objects, Commands.

Every call goes through `Cluster`, which turns the API's refusals into `CliError`s that name the
object and say what to do next, each with an exit code a script can test:

    0 done   1 refused by the API (conflict, invalid, forbidden)   2 bad usage
    3 the object does not exist   4 no cluster answers at the kubeconfig's address
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # kubernetes takes a second to import: only commands that reach a cluster pay it
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

Json = dict[str, Any]

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNREACHABLE = 4

BATCH = ("batch.volcano.sh", "v1alpha1")
SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
BUS = ("bus.volcano.sh", "v1alpha1")
COMMAND_NAMESPACE = "default"  # vcctl files queue Commands (cluster-scoped targets) here
STACK_KUBECONFIG = Path(".phalanx") / "kubeconfig"  # what `phalanx up` writes


class CliError(Exception):
    """A failure to print as one line on stderr and exit with `code`."""

    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def default_kubeconfig() -> str:
    """vcctl's default ($KUBECONFIG, else ~/.kube/config), else the one `phalanx up` wrote here."""
    found = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    if found:
        return found
    home = Path.home() / ".kube" / "config"
    if home.exists() or not STACK_KUBECONFIG.exists():
        return str(home)
    return str(STACK_KUBECONFIG.resolve())


def _json(value: object) -> Json:
    return cast(Json, value)


def _items(value: object) -> list[Json]:
    return list(_json(value)["items"])


def _reason(error: ApiException) -> str:
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        return str(json.loads(error.body or "").get("message") or error.reason)
    return str(error.reason)


@dataclass
class Target:
    """The object a call is about, for error messages: `job default/x`, `queue team-a`."""

    kind: str
    name: str
    namespace: str | None = None
    hint: str = ""  # what to do if it does not exist

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


class Cluster:
    """Volcano's objects over one API client; methods return plain JSON dicts."""

    def __init__(self, api: client.ApiClient, address: str) -> None:
        from kubernetes import client

        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.address = address

    @contextlib.contextmanager
    def _about(self, target: Target | None) -> Iterator[None]:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            yield
        except ApiException as error:
            reason = _reason(error)
            if error.status == 404 and target is not None:
                hint = f"; {target.hint}" if target.hint else ""
                raise CliError(f"{target} not found ({reason}){hint}", EXIT_NOT_FOUND) from None
            about = f"{target}: " if target is not None else ""
            raise CliError(f"{about}{reason} (HTTP {error.status})", EXIT_REFUSED) from None
        except urllib3.exceptions.HTTPError as error:
            raise CliError(
                f"no Kubernetes API answers at {self.address} ({type(error).__name__}); check --kubeconfig "
                "or KUBECONFIG, or start the simulated cluster with `phalanx up --detach`",
                EXIT_UNREACHABLE,
            ) from None

    # -- jobs --------------------------------------------------------------------------------

    def list_jobs(self, namespace: str | None) -> list[Json]:
        with self._about(None):
            if namespace is None:
                found = self.custom.list_cluster_custom_object(*BATCH, "jobs")
            else:
                found = self.custom.list_namespaced_custom_object(*BATCH, namespace, "jobs")
        return _items(found)

    def get_job(self, namespace: str, name: str) -> Json:
        target = Target("job", name, namespace, f"list jobs with `vcctl job list -n {namespace}`")
        with self._about(target):
            return _json(self.custom.get_namespaced_custom_object(*BATCH, namespace, "jobs", name))

    def create_job(self, namespace: str, body: Json) -> Json:
        target = Target("job", body["metadata"].get("name", "?"), namespace)
        with self._about(target):
            return _json(self.custom.create_namespaced_custom_object(*BATCH, namespace, "jobs", body))

    def delete_job(self, namespace: str, name: str) -> None:
        target = Target("job", name, namespace, f"list jobs with `vcctl job list -n {namespace}`")
        with self._about(target):
            self.custom.delete_namespaced_custom_object(*BATCH, namespace, "jobs", name)

    # -- queues and PodGroups ------------------------------------------------------------------

    def list_queues(self) -> list[Json]:
        with self._about(None):
            return _items(self.custom.list_cluster_custom_object(*SCHEDULING, "queues"))

    def get_queue(self, name: str) -> Json:
        with self._about(Target("queue", name, hint="list queues with `vcctl queue list`")):
            return _json(self.custom.get_cluster_custom_object(*SCHEDULING, "queues", name))

    def create_queue(self, body: Json) -> Json:
        with self._about(Target("queue", body["metadata"]["name"])):
            return _json(self.custom.create_cluster_custom_object(*SCHEDULING, "queues", body))

    def patch_queue(self, name: str, patch: Json) -> Json:
        with self._about(Target("queue", name, hint="list queues with `vcctl queue list`")):
            return _json(self.custom.patch_cluster_custom_object(*SCHEDULING, "queues", name, patch))

    def delete_queue(self, name: str) -> None:
        with self._about(Target("queue", name, hint="list queues with `vcctl queue list`")):
            self.custom.delete_cluster_custom_object(*SCHEDULING, "queues", name)

    def list_podgroups(self, namespace: str | None = None) -> list[Json]:
        with self._about(None):
            if namespace is None:
                return _items(self.custom.list_cluster_custom_object(*SCHEDULING, "podgroups"))
            return _items(self.custom.list_namespaced_custom_object(*SCHEDULING, namespace, "podgroups"))

    def get_podgroup(self, namespace: str, name: str) -> Json | None:
        try:
            with self._about(Target("podgroup", name, namespace)):
                return _json(
                    self.custom.get_namespaced_custom_object(*SCHEDULING, namespace, "podgroups", name)
                )
        except CliError as error:
            if error.code == EXIT_NOT_FOUND:
                return None
            raise

    # -- Commands, pods and events -------------------------------------------------------------

    def issue_command(self, target: Json, api_version: str, action: str, namespace: str) -> Json:
        """What vcctl does for suspend/resume/open/close: a Command owned by its target."""
        meta = target["metadata"]
        reference = {
            "apiVersion": api_version,
            "kind": target.get("kind", ""),
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        body = {
            "apiVersion": "/".join(BUS),
            "kind": "Command",
            "metadata": {
                "generateName": f"{meta['name']}-{action.lower()}-",
                "namespace": namespace,
                "ownerReferences": [reference],
            },
            "target": reference,
            "action": action,
        }
        with self._about(Target("command", f"{meta['name']}-{action.lower()}-*", namespace)):
            return _json(self.custom.create_namespaced_custom_object(*BUS, namespace, "commands", body))

    def list_pods(self, namespace: str, selector: str) -> list[Json]:
        with self._about(None):
            found = self.core.list_namespaced_pod(namespace, label_selector=selector)
        return [_serialized(pod) for pod in found.items]

    def list_events(self, namespace: str) -> list[Json]:
        with self._about(None):
            found = self.core.list_namespaced_event(namespace)
        return [_serialized(event) for event in found.items]


def _serialized(model: object) -> Json:
    from kubernetes import client

    return _json(client.ApiClient().sanitize_for_serialization(model))  # type: ignore[no-untyped-call]


def connect(kubeconfig: str | None, master: str | None = None) -> Cluster:
    """A client from the kubeconfig (vcctl's --kubeconfig/-k) and optional --master/-s address."""
    from kubernetes import client, config

    path = kubeconfig or default_kubeconfig()
    settings = client.Configuration()
    try:
        config.load_kube_config(config_file=path, client_configuration=settings)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as error:
        if not master:
            raise CliError(
                f"cannot read kubeconfig {path}: {error}; pass --kubeconfig FILE (or set KUBECONFIG), "
                "or run `phalanx up --detach` for a simulated cluster",
                EXIT_UNREACHABLE,
            ) from None
    if master:
        settings.host = master
        refresh = settings.refresh_api_key_hook
        if refresh is not None:  # it reloads the kubeconfig (host included) before each request

            def keep_master(configuration: client.Configuration) -> None:
                refresh(configuration)
                configuration.host = master

            settings.refresh_api_key_hook = keep_master
    settings.retries = 1  # a missing cluster should fail in a second, not after urllib3's retries
    return Cluster(client.ApiClient(settings), settings.host)
