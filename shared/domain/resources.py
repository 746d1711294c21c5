"""Resource vectors: named amounts in integer milli-units (cpu "1" = 1000, memory "1Ki" = 1024000).

The one representation of "how much" that the scheduler, controller, simulator and admission share.
Milli-units for every resource keep arithmetic exact and let cpu, memory, pods and extended resources
(nvidia.com/gpu, ...) be handled alike, as Volcano's Resource does.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView

from shared.domain.quantity import MAX_MILLI, format_milli, to_milli

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"

# Resources a pod's request never names but that a node and a queue are still measured in.
_IGNORED_IN_REQUESTS = frozenset({"ephemeral-storage", "hugepages-1Gi", "hugepages-2Mi"})


class Resources(Mapping[str, int]):
    """An immutable vector of milli-unit amounts; missing names are zero."""

    __slots__ = ("_amounts",)

    def __init__(self, amounts: Mapping[str, int] | None = None) -> None:
        # Saturating: a sum of capped quantities (two containers asking 1Ei CPU) stays within what
        # a BIGINT column and a JSON encoder hold, instead of failing the write that stores it.
        self._amounts: dict[str, int] = {
            k: v if -MAX_MILLI <= v <= MAX_MILLI else max(-MAX_MILLI, min(MAX_MILLI, v))
            for k, v in (amounts or {}).items()
            if v
        }

    @classmethod
    def parse(cls, quantities: Mapping[str, str | int | float] | None) -> Resources:
        """From a manifest's `{cpu: "500m", memory: 1Gi}` mapping."""
        return cls({name: to_milli(q) for name, q in (quantities or {}).items()})

    @classmethod
    def total(cls, vectors: Iterable[Resources]) -> Resources:
        sums: dict[str, int] = {}
        for vector in vectors:
            for name, amount in vector._amounts.items():
                sums[name] = sums.get(name, 0) + amount
        return cls(sums)

    def __getitem__(self, name: str) -> int:
        return self._amounts.get(name, 0)

    def __contains__(self, name: object) -> bool:
        return name in self._amounts

    def get(self, name: str, default: int = 0) -> int:  # type: ignore[override]
        return self._amounts.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._amounts)

    def __len__(self) -> int:
        return len(self._amounts)

    # The dict's own views: Mapping's generic ones call __iter__ and __getitem__ per name, and
    # the scheduler converts every node's and task's vector each cycle.
    def items(self) -> ItemsView[str, int]:
        return self._amounts.items()

    def keys(self) -> KeysView[str]:
        return self._amounts.keys()

    def values(self) -> ValuesView[int]:
        return self._amounts.values()

    def __add__(self, other: Mapping[str, int]) -> Resources:
        sums = dict(self._amounts)
        for name, amount in other.items():
            sums[name] = sums.get(name, 0) + amount
        return Resources(sums)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        diff = dict(self._amounts)
        for name, amount in other.items():
            diff[name] = diff.get(name, 0) - amount
        return Resources(diff)

    def __mul__(self, factor: int) -> Resources:
        return Resources({name: amount * factor for name, amount in self._amounts.items()})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._amounts == other._amounts
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._amounts.items()))

    def fits_in(self, available: Mapping[str, int]) -> bool:
        """True when every amount here is at most the same amount in `available`."""
        return all(amount <= available.get(name, 0) for name, amount in self._amounts.items())

    def insufficient(self, available: Mapping[str, int]) -> list[str]:
        """The names whose amount here exceeds `available` (Volcano's "Insufficient cpu")."""
        return [n for n, a in self._amounts.items() if a > available.get(n, 0)]

    def exceeds_any(self, limit: Mapping[str, int]) -> list[str]:
        """Names that `limit` bounds and this vector exceeds; names `limit` omits are unbounded."""
        return [n for n, a in self._amounts.items() if n in limit and a > limit[n]]

    def clamp_at_zero(self) -> Resources:
        return Resources({n: a for n, a in self._amounts.items() if a > 0})

    def to_quantities(self) -> dict[str, str]:
        """Back to manifest form: {"cpu": "1500m", "memory": "2Gi"}."""
        return {
            name: format_milli(amount, binary=name == MEMORY or name.startswith("hugepages"))
            for name, amount in sorted(self._amounts.items())
        }

    def __repr__(self) -> str:
        return f"Resources({self.to_quantities()})"


ZERO = Resources()


def pod_requests(
    containers: Iterable[Mapping[str, object]],
    init_containers: Iterable[Mapping[str, object]] = (),
    overhead: Mapping[str, str] | None = None,
) -> Resources:
    """A pod's effective request, as kube-scheduler computes it.

    The sum of its containers' requests (limits stand in where a request is missing), raised to the
    largest init container's request, plus the pod overhead. Counts one pod.
    """

    def requests_of(container: Mapping[str, object]) -> Resources:
        resources = container.get("resources") or {}
        assert isinstance(resources, Mapping)
        merged: dict[str, str] = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        return Resources.parse({k: v for k, v in merged.items() if k not in _IGNORED_IN_REQUESTS})

    total = Resources.total(requests_of(c) for c in containers)
    for init in init_containers:
        init_request = requests_of(init)
        total = Resources({n: max(total[n], init_request[n]) for n in set(total) | set(init_request)})
    if overhead:
        total = total + Resources.parse(overhead)
    return total + Resources({PODS: 1000})
