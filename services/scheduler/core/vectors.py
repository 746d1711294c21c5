"""Compact resource vectors for one cycle: plain int lists over the resource names of the snapshot.

`Resources` (a dict per vector) is the exchange format; inside a cycle every node, queue and task
amount becomes a list indexed by a `ResourceSpace`, and a task's request a sparse tuple of its
non-zero dimensions, because a placement compares a request against many nodes and a dict per
comparison would cost ten times more. Dimension order is cpu, memory, other resources, pods
last, so that the first insufficient dimension is the one Volcano names ("Insufficient cpu").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from shared.domain.resources import CPU, MEMORY, PODS, Resources

# Stands for "no limit" in a dense vector (a capability that does not name a resource).
UNLIMITED = 1 << 62

Sparse = tuple[tuple[int, int], ...]


class ResourceSpace:
    """The resource names present in one snapshot, each given a fixed index."""

    __slots__ = ("index", "names", "size")

    def __init__(self, names: Iterable[str]) -> None:
        present = set(names) | {CPU, MEMORY, PODS}
        middle = sorted(present - {CPU, MEMORY, PODS})
        self.names: tuple[str, ...] = (CPU, MEMORY, *middle, PODS)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.size = len(self.names)

    def dense(self, amounts: Mapping[str, int] | None, missing: int = 0) -> list[int]:
        vector = [missing] * self.size
        for name, amount in (amounts or {}).items():
            vector[self.index[name]] = amount
        return vector

    def sparse(self, amounts: Mapping[str, int]) -> Sparse:
        return tuple(sorted((self.index[n], a) for n, a in amounts.items() if a))

    def resources(self, vector: Sequence[int]) -> Resources:
        return Resources({n: a for n, a in zip(self.names, vector, strict=True) if 0 < a < UNLIMITED})


def fits(request: Sparse, available: Sequence[int]) -> bool:
    # Explicit loops: all() over a generator costs twice as much on this hot path.
    for i, amount in request:  # noqa: SIM110
        if available[i] < amount:
            return False
    return True


def fits_with(request: Sparse, available: Sequence[int], extra: Sequence[int]) -> bool:
    """`request` fits in `available + extra` (idle plus releasing: Volcano's FutureIdle)."""
    for i, amount in request:  # noqa: SIM110
        if available[i] + extra[i] < amount:
            return False
    return True


def first_short(request: Sparse, available: Sequence[int]) -> int | None:
    for i, amount in request:
        if available[i] < amount:
            return i
    return None


def add_into(target: list[int], request: Sparse, sign: int = 1) -> None:
    for i, amount in request:
        target[i] += sign * amount


def over_limit(used: Sequence[int], request: Sparse, limit: Sequence[int]) -> int | None:
    """The first dimension of `request` where used + request would exceed `limit`, else None."""
    for i, amount in request:
        if used[i] + amount > limit[i]:
            return i
    return None


def dominant_share(used: Sequence[int], total: Sequence[int], dims: range) -> float:
    share = 0.0
    for i in dims:
        if total[i] > 0 and used[i] > 0:
            share = max(share, used[i] / total[i])
    return share
