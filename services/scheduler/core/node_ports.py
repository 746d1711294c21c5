"""The NodePorts filter of the `predicates` plugin: two pods asking for one host port never share
a node.

Placement asks `HostPortCheck.failure(node)` for a task that asks for host ports, after the
static filters and the resource fit. It depends on where other pods are, so it is evaluated per
placement (like pod affinity), never cached per task spec. The rule is kube-scheduler's: a
wanted (hostIP, protocol, port) conflicts with a used one of the same protocol and port when
either host IP is the wildcard (0.0.0.0, or none given) or both are the same address.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from services.scheduler.core.snapshot import HostPort

NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
_WILDCARD = ("", "0.0.0.0", "::")


def host_ports_of(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """The host ports a pod spec asks for: every container's ports with a hostPort (and the
    restartable init containers', which run beside them), protocol TCP unless named."""
    containers: list[Any] = list(spec.get("containers") or ())
    containers += [c for c in spec.get("initContainers") or () if (c or {}).get("restartPolicy") == "Always"]
    found: list[HostPort] = []
    for container in containers:
        for port in (container or {}).get("ports") or ():
            number = _port_number((port or {}).get("hostPort"))
            if number:
                found.append((str(port.get("hostIP") or ""), str(port.get("protocol") or "TCP"), number))
    return tuple(sorted(set(found)))


def _port_number(value: Any) -> int:
    try:
        number = int(value or 0)
    except (TypeError, ValueError):
        return 0
    return number if 0 < number < 65536 else 0


def conflicts(wanted: HostPort, used: HostPort) -> bool:
    wanted_ip, wanted_protocol, wanted_port = wanted
    used_ip, used_protocol, used_port = used
    if wanted_port != used_port or wanted_protocol != used_protocol:
        return False
    return wanted_ip in _WILDCARD or used_ip in _WILDCARD or wanted_ip == used_ip


class HostPortCheck:
    """NodePorts for one task against the host ports in use on each node right now."""

    def __init__(self, wanted: Sequence[HostPort], used_by_node: Sequence[Iterable[HostPort]]) -> None:
        self._wanted = tuple(wanted)
        self._used = used_by_node

    def failure(self, node: int) -> str | None:
        for used in self._used[node]:
            if any(conflicts(port, used) for port in self._wanted):
                return NODE_PORTS
        return None
