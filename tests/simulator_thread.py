"""Starting a simulator inside a test process: a background thread with its own event loop.

    with running_simulator(nodes=[NodeSpec("n1", cpu="4")]) as sim:
        client = kubernetes.client.ApiClient(sim.client_configuration())

`sim.url` and `sim.kubeconfig_path` are ready when the block starts; the server stops and the
thread ends when it leaves. `sim.call(fn)` runs `fn` on the simulator's loop (to reach the
cluster object safely from the test thread).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from services.simulator.app import SimulatorServer
from services.simulator.cluster import Cluster
from services.simulator.kubelets.nodes import NodeSpec
from services.simulator.settings import SimulatorSettings

T = TypeVar("T")


class RunningSimulator:
    def __init__(self, server: SimulatorServer, loop: asyncio.AbstractEventLoop, kubeconfig: Path) -> None:
        self._server, self._loop = server, loop
        self.kubeconfig_path = kubeconfig

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def cluster(self) -> Cluster:
        assert self._server.cluster is not None
        return self._server.cluster

    def call(self, function: Callable[[], T]) -> T:
        """Run `function` on the simulator's event loop and return its result."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(function())
            except BaseException as error:
                future.set_exception(error)

        self._loop.call_soon_threadsafe(run)
        return future.result(timeout=30)

    def client_configuration(self) -> Any:
        """A `kubernetes.client.Configuration` for this simulator."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        return configuration


@contextmanager
def running_simulator(nodes: list[NodeSpec] | None = None, **settings: Any) -> Iterator[RunningSimulator]:
    with tempfile.TemporaryDirectory(prefix="simulator-") as directory:
        kubeconfig = Path(directory) / "kubeconfig"
        options = {"port": 0, "kubeconfig": kubeconfig, **settings}
        server = SimulatorServer(SimulatorSettings(**options), nodes)
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            asyncio.set_event_loop(loop)

            async def run() -> None:
                try:
                    server.start()
                except BaseException as error:
                    failure.append(error)
                    started.set()
                    return
                task = asyncio.ensure_future(server.run())
                while not server.started and not task.done():  # noqa: ASYNC110 (no event to await)
                    await asyncio.sleep(0.01)
                started.set()
                await task

            loop.run_until_complete(run())
            loop.close()

        thread = threading.Thread(target=main, name="simulator", daemon=True)
        thread.start()
        started.wait(30)
        if failure:
            raise failure[0]
        try:
            yield RunningSimulator(server, loop, kubeconfig)
        finally:
            loop.call_soon_threadsafe(server.stop)
            thread.join(10)
