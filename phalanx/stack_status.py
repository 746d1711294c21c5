"""`phalanx status`: for every process of a running stack (each replica on its own line), whether
it is ready, as its health port says.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from phalanx.stack import Process, Stack
from shared.infra import local


def status(stack: Stack) -> list[tuple[Process, str]]:
    """Each process of the stack with what its health port says: ready, not ready (why), or gone."""
    rows = []
    for process in stack.processes:
        if not local.is_alive(process.pid):
            rows.append((process, "gone"))
            continue
        if not process.health_port:
            rows.append((process, "running"))
            continue
        try:
            url = f"http://127.0.0.1:{process.health_port}/readyz"
            with urllib.request.urlopen(url, timeout=2) as response:
                rows.append(
                    (process, "ready" if response.status == 200 else f"not ready ({response.status})")
                )
        except urllib.error.HTTPError as error:
            rows.append((process, f"not ready: {error.read().decode(errors='replace')[:120]}"))
        except OSError:
            rows.append((process, "not answering"))
    return rows
