"""Micro-benchmark: what reading an object through a view (shared/volcano/objects.py) costs against
the dict walking it replaced, per object, for the read patterns of the hot paths.

    python -m benchmarks.object_views [--number 200000]

CPU time (process time, the best of seven runs), so other processes on a shared machine disturb
it less than wall time would; still compare the rows with each other, not with another machine.
- `one field`: a single `uid` read, the worst case for a view (it is made to be read once);
- `watcher event`: what the watcher read of one pod event (relevance, identity, version);
- `controller put`: what the controller's cache read of one object on `put` (key, version, uid,
  controller owner, group annotation), each walked from the top as the old helpers did.
"""

from __future__ import annotations

import argparse
import platform
import time
import timeit
from collections.abc import Callable
from typing import Any

from shared.volcano.keys import GROUP_NAME
from shared.volcano.objects import PodObject

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "job-worker-0",
        "namespace": "team",
        "uid": "3f0e9c52-6a41-4bfc-9d2e-0d3c1b2a9f10",
        "resourceVersion": "123456",
        "labels": {"volcano.sh/job-name": "job"},
        "annotations": {GROUP_NAME: "job-pg", "volcano.sh/task-spec": "worker"},
        "ownerReferences": [{"kind": "Job", "uid": "j-1", "controller": True}],
    },
    "spec": {"nodeName": "node-a", "schedulerName": "volcano"},
    "status": {"phase": "Running"},
}
OURS = ("volcano",)


def _walk_one(obj: dict[str, Any]) -> object:
    return (obj.get("metadata") or {}).get("uid", "")


def _view_one(obj: dict[str, Any]) -> object:
    return PodObject(obj).uid


def _walk_watcher(obj: dict[str, Any]) -> object:
    spec = obj.get("spec") or {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    relevant = spec.get("schedulerName") in OURS or GROUP_NAME in annotations or bool(spec.get("nodeName"))
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or None
    name = metadata["name"]
    return relevant, namespace, name, metadata.get("uid"), int(metadata.get("resourceVersion"))


def _view_watcher(obj: dict[str, Any]) -> object:
    pod = PodObject(obj)
    relevant = pod.scheduler_name in OURS or GROUP_NAME in pod.annotations or bool(pod.node_name)
    return relevant, pod.namespace or None, pod.name, pod.uid, pod.version


def _controller_uid(obj: dict[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _walk_put(obj: dict[str, Any]) -> object:
    meta = obj.get("metadata") or {}
    key = (meta.get("namespace") or "", meta["name"])
    version = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    uid = (obj.get("metadata") or {}).get("uid", "")
    group = ((obj.get("metadata") or {}).get("annotations") or {}).get(GROUP_NAME)
    return key, version, uid, _controller_uid(obj), group


def _view_put(obj: dict[str, Any]) -> object:
    pod = PodObject(obj)
    return pod.key, pod.version, pod.uid, pod.controller_uid, pod.group_name


CASES: list[tuple[str, Callable[[dict[str, Any]], object], Callable[[dict[str, Any]], object]]] = [
    ("one field", _walk_one, _view_one),
    ("watcher event", _walk_watcher, _view_watcher),
    ("controller put", _walk_put, _view_put),
]


def _nanoseconds(read: Callable[[dict[str, Any]], object], number: int) -> float:
    runs = timeit.repeat(lambda: read(POD), number=number, repeat=7, timer=time.process_time)
    return min(runs) / number * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=200_000)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {args.number} reads per run, CPU ns per object")
    print(f"{'pattern':16} {'dict walk':>10} {'view':>10} {'ratio':>6}")
    for label, walk, view in CASES:
        assert walk(POD) is not None
        assert view(POD) is not None
        walked, viewed = _nanoseconds(walk, args.number), _nanoseconds(view, args.number)
        print(f"{label:16} {walked:10.0f} {viewed:10.0f} {viewed / walked:6.2f}")


if __name__ == "__main__":
    main()
