"""Pure: DRA device selectors (CEL), evaluated with cel-python against one device at a time.

A DeviceClass's `spec.selectors[].cel.expression` and a claim request's `exactly.selectors[]` are
CEL expressions over `device`, as Kubernetes' structured parameters define it:
`device.driver`, `device.attributes["<domain>"].<name>` and `device.capacity["<domain>"].<name>`
(attributes and capacities are grouped by the domain of their qualified name; an unqualified name
belongs to the driver's domain), and `device.allowMultipleAllocations`. Capacities are Kubernetes
quantities: `quantity("40Gi")` makes one and `compareTo`, `isGreaterThan`, `isLessThan`,
`asInteger` compare and read them, as Kubernetes' CEL quantity library does.

The evaluator is cel-python's (module `celpy`), not our own: docs/devices.md says why. A device
matches when every expression yields true; an expression that fails at run time (for example it
reads an attribute the device does not have) does not match that device. An expression that does
not compile matches nothing and `compile_problem` says why, so the claim's verdict can name it.
Compiled programs are cached by their text: a gang's pods share their selectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes

from shared.domain.quantity import QuantityError, to_milli

_ENVIRONMENT = celpy.Environment()


class CelQuantity(celtypes.IntType):
    """A Kubernetes quantity as a CEL value, in milli-units, so that `==` and ordering compare amounts."""


def _quantity(text: Any) -> CelQuantity:
    try:
        return CelQuantity(to_milli(str(text)))
    except QuantityError as error:
        raise ValueError(f"quantity({text!r}): {error}") from error


def _compare(left: Any, right: Any) -> celtypes.IntType:
    return celtypes.IntType((int(left) > int(right)) - (int(left) < int(right)))


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "compareTo": _compare,
    "isGreaterThan": lambda left, right: celtypes.BoolType(int(left) > int(right)),
    "isLessThan": lambda left, right: celtypes.BoolType(int(left) < int(right)),
    "asInteger": lambda value: celtypes.IntType(int(value) // 1000),
}


@lru_cache(maxsize=1024)
def _program(expression: str) -> Any:
    return _ENVIRONMENT.program(_ENVIRONMENT.compile(expression), functions=_FUNCTIONS)


def compile_problem(expression: str) -> str | None:
    """Why the expression cannot be compiled, or None when it can."""
    try:
        _program(expression)
    except Exception as error:  # cel-python raises its parser's own error types
        return f"CEL expression {expression!r} does not compile: {str(error).splitlines()[0]}"
    return None


def device_activation(
    driver: str, attributes: Mapping[str, Any], capacity: Mapping[str, int], multiple: bool = False
) -> dict[str, Any]:
    """The `device` variable: qualified names ("domain/name") grouped by domain."""
    by_domain: dict[str, dict[str, Any]] = {}
    for qualified, value in attributes.items():
        domain, name = _split(qualified, driver)
        by_domain.setdefault(domain, {})[name] = value
    capacities: dict[str, dict[str, Any]] = {}
    for qualified, amount in capacity.items():
        domain, name = _split(qualified, driver)
        capacities.setdefault(domain, {})[name] = CelQuantity(amount)
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("attributes"): _to_cel(by_domain),
                celtypes.StringType("capacity"): _to_cel(capacities),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(multiple),
            }
        )
    }


def matches(expressions: Sequence[str], activation: Mapping[str, Any]) -> bool:
    """Every expression yields true for the device."""
    for expression in expressions:
        try:
            result = _program(expression).evaluate(activation)
        except Exception:  # a run-time or compile error: the device does not match
            return False
        if not isinstance(result, celtypes.BoolType) or not result:
            return False
    return True


def _split(qualified: str, driver: str) -> tuple[str, str]:
    if "/" in qualified:
        domain, name = qualified.split("/", 1)
        return domain, name
    return driver, qualified


def _to_cel(value: Any) -> Any:
    if isinstance(value, CelQuantity):
        return value
    if isinstance(value, Mapping):
        return celtypes.MapType({celtypes.StringType(k): _to_cel(v) for k, v in value.items()})
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    return celtypes.StringType(str(value))
