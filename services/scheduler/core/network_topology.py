"""Pure: the `network-topology-aware` plugin's figures: per-HyperNode usage and bin packing.

`build_context` makes one `NetworkTopology` per cycle when the snapshot has HyperNodes. It keeps
every HyperNode's allocatable and used resources as sums over its nodes, computed once from the
cycle state and then kept current by `CycleState.listeners` as placements are made and undone,
so a domain's free capacity is read in constant time instead of being summed per gang.

Bin packing, with Volcano's weights and arguments (`weight`, `hypernode.binpack.cpu`,
`.memory`, `.resources` and `.resources.<name>`, `hypernode.binpack.normal-pod.enable` and
`.fading`): a HyperNode's score for a request is the weighted mean over the weighted resources
the request names of (used + request) / allocatable, or 0 when the request does not fit.
Constrained gangs try the HyperNodes of one tier in descending score (the fullest that still
fits first); a pod without a constraint gets a node bonus, the mean of the scores of the
HyperNodes containing the node, tier `i` weighted by fading^(i-1), times 100 and `weight`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.scheduler.core.config import SchedulerConf
from services.scheduler.core.hypernodes import Domain, Domains
from services.scheduler.core.state import CycleState
from services.scheduler.core.vectors import Sparse, add_into

PLUGIN = "network-topology-aware"
MAX_SCORE = 100.0


@dataclass(frozen=True, slots=True)
class BinPackWeights:
    weight: float = 1.0
    resources: tuple[tuple[str, float], ...] = (("cpu", 1.0), ("memory", 1.0))
    normal_pods: bool = True
    fading: float = 0.8
    enabled: bool = False  # the plugin is configured


def weights_of(conf: SchedulerConf) -> BinPackWeights:
    option = conf.plugin(PLUGIN)
    if option is None:
        return BinPackWeights()

    def number(key: str, default: float) -> float:
        value = conf.argument(PLUGIN, key, default)
        return default if value < 0 else value

    resources = [
        ("cpu", number("hypernode.binpack.cpu", 1)),
        ("memory", number("hypernode.binpack.memory", 1)),
    ]
    extra = str(option.arguments.get("hypernode.binpack.resources", ""))
    names = filter(None, (n.strip() for n in extra.split(",")))
    resources.extend((name, number(f"hypernode.binpack.resources.{name}", 1)) for name in names)
    normal = str(option.arguments.get("hypernode.binpack.normal-pod.enable", True)).lower() not in (
        "false",
        "0",
    )
    return BinPackWeights(
        weight=number("weight", 1),
        resources=tuple(resources),
        normal_pods=normal,
        fading=number("hypernode.binpack.normal-pod.fading", 0.8),
        enabled=True,
    )


class NetworkTopology:
    """HyperNode domains of one cycle with their usage, kept current through the state."""

    def __init__(self, state: CycleState, domains: Domains, weights: BinPackWeights) -> None:
        self.state = state
        self.domains = domains
        self.weights = weights
        size = state.space.size
        self.allocatable = [[0] * size for _ in domains.all]
        self.used = [[0] * size for _ in domains.all]
        for domain in domains.all:
            alloc, used = self.allocatable[domain.index], self.used[domain.index]
            for node in domain.nodes:
                for i, (total, idle) in enumerate(
                    zip(state.allocatable[node], state.idle[node], strict=True)
                ):
                    alloc[i] += total
                    used[i] += total - idle
        index = state.space.index
        self._weighted = [(index[name], w) for name, w in weights.resources if name in index and w > 0]
        tiers = domains.tiers
        self._tier_weight = {tier: weights.fading ** (tier - 1) for tier in tiers}
        self._tier_total = sum(self._tier_weight.values())
        # Per node: (tier weight, domain index) of its first domain in each tier, and the weight of
        # the tiers where no HyperNode holds it (those count as full, as in Volcano).
        self._node_tiers: list[tuple[tuple[tuple[float, int], ...], float]] = []
        for node_domains in domains.of_node:
            first: dict[int, int] = {}
            for domain in node_domains:
                first.setdefault(domain.tier, domain.index)
            missing = sum(w for tier, w in self._tier_weight.items() if tier not in first)
            self._node_tiers.append((tuple((self._tier_weight[t], i) for t, i in first.items()), missing))
        state.listeners.append(self._changed)

    def _changed(self, node: int, request: Sparse, sign: int) -> None:
        for domain in self.domains.of_node[node]:
            add_into(self.used[domain.index], request, sign)

    def free(self, domain: Domain) -> list[int]:
        return [a - u for a, u in zip(self.allocatable[domain.index], self.used[domain.index], strict=True)]

    def holds(self, domain: Domain, need: Sequence[int]) -> bool:
        """Whether the domain's free capacity, summed over its nodes, covers `need` (a pre-filter:
        the pods must still fit node by node)."""
        free = self.free(domain)
        return all(n <= f for n, f in zip(need, free, strict=True))

    def score(self, domain: Domain, request: Sequence[int]) -> float:
        """Volcano's HyperNode bin-packing score of `request` (dense) on `domain`: 0..1."""
        alloc, used = self.allocatable[domain.index], self.used[domain.index]
        total = weight_sum = 0.0
        for i, weight in self._weighted:
            if request[i] <= 0:
                continue
            if alloc[i] <= 0 or used[i] + request[i] > alloc[i]:
                return 0.0
            total += weight * (used[i] + request[i]) / alloc[i]
            weight_sum += weight
        return total / weight_sum if weight_sum > 0 else 0.0

    def normal_pod_bonus(self, request: Sparse) -> Callable[[int], float] | None:
        """Node scores for a pod without a constraint (None when off): prefer nodes in fuller
        HyperNodes. Every domain is scored once for the request, then a node's score is the
        fading-weighted mean of its domains' scores: a scan of the nodes costs a few lookups each."""
        if not (self.weights.enabled and self.weights.normal_pods) or self._tier_total <= 0:
            return None
        dense = [0] * self.state.space.size
        for i, amount in request:
            dense[i] = amount
        scores = [self.score(domain, dense) for domain in self.domains.all]
        scale = self.weights.weight * MAX_SCORE / self._tier_total
        node_tiers = self._node_tiers

        def bonus(node: int) -> float:
            tiers, missing = node_tiers[node]
            return scale * (missing + sum(weight * scores[index] for weight, index in tiers))

        return bonus
