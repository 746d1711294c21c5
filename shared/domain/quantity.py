"""Kubernetes resource quantities ("500m", "1.5", "2Gi", "1e3"), parsed exactly.

Used wherever a manifest's resource amounts are read: the Volcano models, the scheduler's snapshot,
the simulator's kubelets. Values are exact `Fraction`s so that `1000m == 1` and `2Gi == 2147483648`
hold without float rounding; `to_milli` gives the integer milli-units that resource vectors carry.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from functools import total_ordering
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)


# Bounds that keep parsing cheap whatever the input: Kubernetes represents a quantity in at most
# 2^63-1 units at nano precision, so no legal quantity needs more digits or a larger exponent than
# these, while `1e9999999` would otherwise build a ten-million-digit integer.
MAX_QUANTITY_CHARS = 64
MAX_EXPONENT = 40
# The largest milli-unit amount a resource vector or a BIGINT column holds.
MAX_MILLI = 2**63 - 1


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message quotes it and the accepted form."""


class QuantityOutOfRange(QuantityError):
    """A well-formed quantity whose exponent no representable amount needs (`1e9999999`).

    Kubernetes accepts it and caps it; admission refuses it; `to_milli` caps it as Kubernetes
    does, so that a Pod from a cluster's other clients never stops the scheduler's ingest."""

    def __init__(self, message: str, *, huge: bool, negative: bool, zero: bool) -> None:
        super().__init__(message)
        self.huge, self.negative, self.zero = huge, negative, zero


def parse_quantity(text: str | int | float) -> Fraction:
    """Return the exact value of a quantity such as "250m", "1.5Gi" or 3."""
    if isinstance(text, bool):
        raise QuantityError(f"quantity {text!r} must be a number or a string such as '500m' or '2Gi'")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"quantity {text!r} must be finite")
        return Fraction(str(text))
    if len(text) > MAX_QUANTITY_CHARS:
        raise QuantityError(f"quantity {text[:24]!r}... is longer than {MAX_QUANTITY_CHARS} characters")
    match = _PATTERN.match(text.strip())
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    value = Fraction(match["number"])
    if match["binary"]:
        value *= _BINARY[match["binary"]]
    elif match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityOutOfRange(
                f"quantity {text!r} has an exponent beyond ±{MAX_EXPONENT}",
                huge=exponent > 0,
                negative=match["sign"] == "-",
                zero=value == 0,
            )
        value *= Fraction(10) ** exponent
    else:
        value *= _DECIMAL[match["decimal"] or ""]
    return -value if match["sign"] == "-" else value


@functools.lru_cache(maxsize=4096, typed=True)
def to_milli(text: str | int | float) -> int:
    """The quantity in integer milli-units, rounded up as Kubernetes rounds requests (1n -> 1m),
    capped at ±MAX_MILLI as Kubernetes caps what it cannot represent, so that a value admission
    never saw (a plain Pod's `1Ei` CPU) still fits every resource vector and BIGINT column.

    Remembered per text: every pod and PodGroup event is projected again, and the same few
    quantities ("100m", "500Mi") parsed through Fractions were a tenth of the scheduler's ingest."""
    try:
        milli = math.ceil(parse_quantity(text) * 1000)
    except QuantityOutOfRange as far:
        # Beyond any representable amount: the cap; below 1n: 1n, which rounds up to 1m.
        milli = 0 if far.zero else MAX_MILLI if far.huge else 1
        milli = -milli if far.negative else milli
    return max(-MAX_MILLI, min(MAX_MILLI, milli))


@functools.lru_cache(maxsize=4096, typed=True)
def milli_in_range(text: str | int | float) -> bool:
    """Whether the quantity's milli-unit amount is representable without capping. Remembered per
    text as `to_milli` is: the simulator and admission check every object's quantities on every
    write (a text that fails to parse raises, and is not remembered)."""
    return abs(math.ceil(parse_quantity(text) * 1000)) <= MAX_MILLI


def format_milli(milli: int, *, binary: bool = False) -> str:
    """A readable quantity for a milli-unit amount: "500m", "4", "2Gi" (binary) or "3k"."""
    if milli % 1000:
        return f"{milli}m"
    whole = milli // 1000
    if binary and whole:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if whole % _BINARY[suffix] == 0:
                return f"{whole // _BINARY[suffix]}{suffix}"
    return str(whole)


@total_ordering
class Quantity:
    """A quantity that remembers how it was written, compares and adds by value.

    Manifests round-trip through the models unchanged because `str()` gives back the original text
    until arithmetic produces a new value.
    """

    __slots__ = ("_text", "value")

    def __init__(self, text: str | int | float | Quantity) -> None:
        if isinstance(text, Quantity):
            self.value: Fraction = text.value
            self._text: str = text._text
            return
        self.value = parse_quantity(text)
        self._text = text.strip() if isinstance(text, str) else str(text)

    @classmethod
    def from_value(cls, value: Fraction) -> Quantity:
        quantity = cls.__new__(cls)
        quantity.value = value
        quantity._text = _canonical(value)
        return quantity

    @property
    def milli(self) -> int:
        return math.ceil(self.value * 1000)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity.from_value(self.value + other.value)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity.from_value(self.value - other.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        if isinstance(other, str | int | float) and not isinstance(other, bool):
            try:
                return self.value == parse_quantity(other)
            except QuantityError:
                return False
        return NotImplemented

    def __lt__(self, other: Any) -> bool:
        if not isinstance(other, Quantity):
            other = Quantity(other)
        return bool(self.value < other.value)

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Quantity({self._text!r})"


def _canonical(value: Fraction) -> str:
    milli = value * 1000
    if milli.denominator != 1:
        return str(float(value))
    return format_milli(int(milli), binary=value.denominator == 1 and value >= 1024)
