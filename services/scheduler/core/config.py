"""volcano-scheduler.conf: which actions run, in which order, with which tiers of plugins.

The shell reads the file or ConfigMap text and calls `load_conf` whenever it changes; a text that
does not parse keeps the previous configuration (as Volcano does) and reports a `ConfError` whose
message names the unknown action, switch or argument. A plugin Phalanx does not have (Volcano's
own that Phalanx does not implement, or a name nobody knows) and a Volcano action Phalanx does not
implement are skipped instead, as Volcano skips a plugin it cannot find: the configuration loads
without them and `SchedulerConf.skipped` names each, for the shell to warn about. `plan_cycle`
reads the result through `SchedulerConf.plugin(...)`, `enabled(...)` and `argument(...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from services.scheduler.core.devices import mapping_problem
from services.scheduler.core.durations import parse_duration as parse_duration  # re-exported
from services.scheduler.core.preemption_cost import ARGUMENTS as PREEMPTION_COST_ARGUMENTS
from services.scheduler.core.preemption_cost import args_of as preemption_cost_args

ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim")

# Per-extension-point switches Volcano accepts on a plugin (all default true but enableHierarchy).
SWITCHES = frozenset({
    "enableJobOrder", "enableHierarchy", "enableJobReady", "enableJobPipelined",
    "enableTaskOrder", "enablePreemptable", "enableReclaimable", "enablePreemptive",
    "enableQueueOrder", "enabledClusterOrder", "enablePredicate", "enableBestNode",
    "enableNodeOrder", "enableTargetJob", "enableReservedNodes", "enableJobEnqueued",
    "enabledVictim", "enableJobStarving", "enabledOverused", "enabledAllocatable",
    "enabledHyperNodeOrder", "enabledSubJobReady", "enabledSubJobPipelined",
    "enabledSubJobOrder", "enabledHyperNodeGradient",
})  # fmt: skip

# Plugins Phalanx implements and the arguments each accepts (names as in Volcano).
PLUGIN_ARGUMENTS: Mapping[str, frozenset[str]] = {
    "priority": frozenset(),
    "gang": frozenset({"releaseBelowMinAfterSeconds"}),  # Phalanx's optional release rule
    "conformance": frozenset(),
    "drf": frozenset(),
    # Phalanx's usage over time (core/fairshare.py) and the deserved share it shapes (fairshare_deserved.py)
    "fairshare": frozenset({"halfLife", "deservedByUsage", "deservedBound"}),
    # deviceClassMappings: which queue resource DRA device classes count as (core/device_quota.py).
    "proportion": frozenset({"deviceClassMappings"}),
    "capacity": frozenset({"ancestorReclaimLevel", "deviceClassMappings"}),
    "overcommit": frozenset({"overcommit-factor"}),
    "predicates": frozenset(
        {
            "predicate.NodeAffinityEnable",
            "predicate.NodePortsEnable",
            "predicate.TaintTolerationEnable",
            "predicate.PodAffinityEnable",
            "predicate.NodeVolumeLimitsEnable",
            "predicate.VolumeZoneEnable",
            "predicate.PodTopologySpreadEnable",
            "predicate.VolumeBindingEnable",
            "predicate.CacheEnable",
        }
    ),
    "nodeorder": frozenset(
        {
            "leastrequested.weight",
            "mostrequested.weight",
            "nodeaffinity.weight",
            "podaffinity.weight",
            "balancedresource.weight",
            "tainttoleration.weight",
            "imagelocality.weight",
            "podtopologyspread.weight",
        }
    ),
    "binpack": frozenset({"binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources"}),
    "sla": frozenset({"sla-waiting-time"}),
    "task-topology": frozenset({"task-topology.weight"}),
    "pdb": frozenset(),
    # Phalanx's cost-counting preemption (core/preemption_cost.py checks the values).
    "preemptioncost": PREEMPTION_COST_ARGUMENTS,
    "network-topology-aware": frozenset(
        {
            "weight",
            "hypernode.binpack.cpu",
            "hypernode.binpack.memory",
            "hypernode.binpack.resources",
            "hypernode.binpack.normal-pod.enable",
            "hypernode.binpack.normal-pod.fading",
            "hypernode.gradient.evict.max-hypernodes",
        }
    ),
}
# Volcano names Phalanx knows but does not implement: skipped with a warning naming them.
UNIMPLEMENTED_PLUGINS = frozenset({
    "tdm", "numa-aware", "deviceshare", "cdp",
    "rescheduling", "usage", "resource-strategy-fit", "nodegroup", "extender", "resourcequota",
})  # fmt: skip
UNIMPLEMENTED_ACTIONS = frozenset({"shuffle", "gangpreempt", "gangreclaim"})
_ARGUMENT_PREFIXES: Mapping[str, str] = {
    "binpack": "binpack.resources.",
    "network-topology-aware": "hypernode.binpack.resources.",
}

ACTION_ARGUMENTS: Mapping[str, frozenset[str]] = {
    "enqueue": frozenset(),
    "allocate": frozenset({"predicateErrorCacheEnable"}),
    # Phalanx's reservation backfill (core/reservation.py); without it, Volcano's backfill.
    "backfill": frozenset(
        {"predicateErrorCacheEnable", "reservation", "reservationDepth", "predictedGangs", "defaultRuntime"}
    ),
    "reclaim": frozenset({"predicateErrorCacheEnable"}),
    "preempt": frozenset(
        {
            "predicateErrorCacheEnable",
            "enableTopologyAwarePreemption",
            "topologyAwarePreemptWorkerNum",
            "minCandidateNodesPercentage",
            "minCandidateNodesAbsolute",
            "maxCandidateNodesAbsolute",
        }
    ),
}


class ConfError(ValueError):
    """A volcano-scheduler.conf that cannot be used; the message names the offending entry."""


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    switches: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def enabled(self, switch: str) -> bool:
        # Volcano leaves enableHierarchy off unless set; every other switch defaults to on.
        return self.switches.get(switch, switch != "enableHierarchy")


@dataclass(frozen=True, slots=True)
class Tier:
    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Entries left out as Volcano leaves out a plugin it cannot find: each names one (a warning).
    skipped: tuple[str, ...] = ()

    def plugin(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for option in tier.plugins:
                if option.name == name:
                    return option
        return None

    def enabled(self, name: str, switch: str | None = None) -> bool:
        """True when plugin `name` is configured (and, if given, its `switch` is on)."""
        option = self.plugin(name)
        return option is not None and (switch is None or option.enabled(switch))

    def argument(self, plugin: str, key: str, default: float) -> float:
        option = self.plugin(plugin)
        if option is None or key not in option.arguments:
            return default
        value = option.arguments[key]
        try:
            return float(value)
        except (TypeError, ValueError) as err:
            raise ConfError(f"argument {key!r} of plugin {plugin!r} is not a number: {value!r}") from err

    def device_class_mappings(self) -> Any:
        """The `deviceClassMappings` argument of capacity or proportion, if either has one."""
        for plugin in ("capacity", "proportion"):
            option = self.plugin(plugin)
            if option is not None and "deviceClassMappings" in option.arguments:
                return option.arguments["deviceClassMappings"]
        return None

    def tier_of(self, name: str) -> int | None:
        for index, tier in enumerate(self.tiers):
            if any(option.name == name for option in tier.plugins):
                return index
        return None


def parse_conf(text: str) -> SchedulerConf:
    """Parse volcano-scheduler.conf; raise ConfError naming whatever is unknown or malformed."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfError(f"volcano-scheduler.conf is not valid YAML: {err}") from err
    if not isinstance(raw, Mapping):
        raise ConfError("volcano-scheduler.conf must be a mapping with 'actions' and 'tiers'")
    unknown_keys = sorted(set(raw) - {"actions", "tiers", "configurations", "metrics"})
    if unknown_keys:
        raise ConfError(f"unknown key {unknown_keys[0]!r} in volcano-scheduler.conf")
    skipped: list[str] = []
    actions = _parse_actions(raw.get("actions"), skipped)
    tiers = tuple(_parse_tier(i, t, skipped) for i, t in enumerate(raw.get("tiers") or ()))
    _reject_hierarchy_conflict(tiers)
    configurations = _parse_configurations(raw.get("configurations") or [])
    return SchedulerConf(actions=actions, tiers=tiers, configurations=configurations, skipped=tuple(skipped))


@dataclass(frozen=True, slots=True)
class ConfLoad:
    """A (re)load's outcome: the configuration to use now, and the error if the text was bad."""

    conf: SchedulerConf
    error: ConfError | None
    changed: bool


def load_conf(text: str | None, previous: SchedulerConf | None = None) -> ConfLoad:
    """Reload on a file or ConfigMap change: no text means the default; bad text keeps previous."""
    if text is None or not text.strip():
        return ConfLoad(DEFAULT_CONF, None, previous != DEFAULT_CONF)
    try:
        conf = parse_conf(text)
    except ConfError as err:
        return ConfLoad(previous or DEFAULT_CONF, err, previous is None)
    return ConfLoad(conf, None, conf != previous)


def _parse_actions(value: object, skipped: list[str]) -> tuple[str, ...]:
    """A name Volcano does not know fails the whole text, as in Volcano; a Volcano action that
    Phalanx does not implement is skipped (and named in `skipped`), the others run."""
    if not isinstance(value, str) or not value.strip():
        raise ConfError("'actions' must be a comma-separated string such as 'enqueue, allocate'")
    names = tuple(name.strip() for name in value.split(","))
    kept: list[str] = []
    for name in names:
        if name in UNIMPLEMENTED_ACTIONS:
            skipped.append(f"action {name!r} is a Volcano action that Phalanx does not implement: skipped")
            continue
        if name not in ACTIONS:
            raise ConfError(f"failed to find Action {name}: known actions are {', '.join(ACTIONS)}")
        kept.append(name)
    if not kept:
        raise ConfError(f"no action Phalanx implements in {value!r}")
    return tuple(kept)


def _parse_tier(index: int, raw: object, skipped: list[str]) -> Tier:
    if not isinstance(raw, Mapping) or set(raw) - {"plugins"}:
        raise ConfError(f"tier {index + 1} must be a mapping with only 'plugins'")
    plugins = raw.get("plugins") or ()
    if not isinstance(plugins, list):
        raise ConfError(f"tier {index + 1}: 'plugins' must be a list")
    kept = []
    for plugin in plugins:
        if not isinstance(plugin, Mapping) or not isinstance(plugin.get("name"), str):
            raise ConfError(f"tier {index + 1}: every plugin needs a 'name'")
        name = plugin["name"]
        # Volcano's session leaves out a plugin it has no builder for ("Failed to get plugin")
        # and runs the rest; so does Phalanx, saying so, with its switches and arguments unread.
        if name in UNIMPLEMENTED_PLUGINS:
            skipped.append(
                f"plugin {name!r} in tier {index + 1} is a Volcano plugin that Phalanx does not "
                "implement: skipped"
            )
        elif name not in PLUGIN_ARGUMENTS:
            known = ", ".join(sorted(PLUGIN_ARGUMENTS))
            skipped.append(f"unknown plugin {name!r} in tier {index + 1}: skipped; known plugins: {known}")
        else:
            kept.append(_parse_plugin(plugin))
    return Tier(tuple(kept))


def _parse_plugin(raw: Mapping[str, Any]) -> PluginOption:
    name = raw["name"]
    switches: dict[str, bool] = {}
    for key, value in raw.items():
        if key in {"name", "arguments"}:
            continue
        if key not in SWITCHES:
            raise ConfError(f"unknown switch {key!r} on plugin {name!r}")
        if not isinstance(value, bool):
            raise ConfError(f"switch {key!r} on plugin {name!r} must be true or false")
        switches[key] = value
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ConfError(f"arguments of plugin {name!r} must be a mapping")
    prefix = _ARGUMENT_PREFIXES.get(name)
    for key, value in arguments.items():
        if key not in PLUGIN_ARGUMENTS[name] and not (prefix and str(key).startswith(prefix)):
            raise ConfError(f"unknown argument {key!r} for plugin {name!r}")
        if name != "preemptioncost":
            _check_value(name, str(key), value)
    if name == "preemptioncost":
        try:
            preemption_cost_args(arguments)
        except ValueError as err:
            raise ConfError(str(err)) from err
    return PluginOption(name=name, switches=switches, arguments=dict(arguments))


def _check_value(plugin: str, key: str, value: object) -> None:
    """Reject at load time a value the cycle could not use, rather than fail mid-cycle."""
    if key in ("sla-waiting-time", "halfLife"):
        if parse_duration(value) is None:
            raise ConfError(f"argument {key!r} of plugin {plugin!r} must be a duration such as 5m")
    elif key in ("binpack.resources", "hypernode.binpack.resources") or key.startswith("predicate."):
        return
    elif key == "deviceClassMappings":
        problem = mapping_problem(value)
        if problem is not None:
            raise ConfError(f"argument {key!r} of plugin {plugin!r} {problem}")
    elif key == "deservedBound":
        if (_number(value) or 0.0) < 1:  # not a number, or below 1
            raise ConfError(f"argument {key!r} of plugin {plugin!r} must be a number >= 1: {value!r}")
    elif key in ("hypernode.binpack.normal-pod.enable", "deservedByUsage"):
        if str(value).lower() not in ("true", "false", "1", "0"):
            raise ConfError(f"argument {key!r} of plugin {plugin!r} is not a boolean: {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfError(f"argument {key!r} of plugin {plugin!r} is not a number: {value!r}")
    else:
        try:
            float(value)
        except ValueError as err:
            raise ConfError(f"argument {key!r} of plugin {plugin!r} is not a number: {value!r}") from err


def _number(value: object) -> float | None:
    try:
        return None if isinstance(value, bool) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _reject_hierarchy_conflict(tiers: tuple[Tier, ...]) -> None:
    for tier in tiers:
        names = {p.name for p in tier.plugins}
        hdrf = any(p.name == "drf" and p.switches.get("enableHierarchy") for p in tier.plugins)
        if hdrf and "proportion" in names:
            raise ConfError("proportion and drf with hierarchy enabled conflicts")


def _parse_configurations(raw: object) -> Mapping[str, Mapping[str, Any]]:
    if not isinstance(raw, list):
        raise ConfError("'configurations' must be a list of {name, arguments}")
    result: dict[str, Mapping[str, Any]] = {}
    for entry in raw:
        if not isinstance(entry, Mapping) or entry.get("name") not in ACTION_ARGUMENTS:
            name = entry.get("name") if isinstance(entry, Mapping) else entry
            raise ConfError(f"configurations: unknown action {name!r}")
        arguments = entry.get("arguments") or {}
        for key in arguments:
            if key not in ACTION_ARGUMENTS[entry["name"]]:
                raise ConfError(f"unknown argument {key!r} for action {entry['name']!r}")
        result[entry["name"]] = dict(arguments)
    _check_reservation(result.get("backfill") or {})
    return result


RESERVATION_MODES = ("none", "backfill", "strict")


def _check_reservation(arguments: Mapping[str, Any]) -> None:
    mode = arguments.get("reservation", "none")
    if mode not in RESERVATION_MODES:
        raise ConfError(
            f"argument 'reservation' of action 'backfill' must be one of "
            f"{', '.join(RESERVATION_MODES)}: {mode!r}"
        )
    if "defaultRuntime" in arguments and parse_duration(arguments["defaultRuntime"]) is None:
        raise ConfError(
            "argument 'defaultRuntime' of action 'backfill' must be a duration such as 24h: "
            f"{arguments['defaultRuntime']!r}"
        )
    for key in ("reservationDepth", "predictedGangs"):
        value = arguments.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfError(f"argument {key!r} of action 'backfill' must be a whole number >= 0: {value!r}")


DEFAULT_CONF_TEXT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
# Volcano's built-in default (pkg/scheduler/util.go), used when no file is given.
DEFAULT_CONF = parse_conf(DEFAULT_CONF_TEXT)
