"""volcano-scheduler.conf parsing: Volcano's format, its default, and errors that name the culprit."""

from __future__ import annotations

import pytest

from services.scheduler.core import DEFAULT_CONF, ConfError, load_conf, parse_conf
from services.scheduler.core.config import PLUGIN_ARGUMENTS

pytestmark = pytest.mark.unit

HELM_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 1.5}
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
    arguments: {leastrequested.weight: 0, mostrequested.weight: 2}
  - name: binpack
    arguments: {binpack.weight: 3, binpack.resources: nvidia.com/gpu, binpack.resources.nvidia.com/gpu: 5}
configurations:
- name: allocate
  arguments: {predicateErrorCacheEnable: true}
"""


def test_default_is_volcanos_builtin_profile() -> None:
    assert DEFAULT_CONF.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in t.plugins] for t in DEFAULT_CONF.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]


def test_helm_profile_parses_with_switches_and_arguments() -> None:
    conf = parse_conf(HELM_CONF)
    gang = conf.plugin("gang")
    assert gang is not None
    assert gang.enabled("enablePreemptable") is False
    assert gang.enabled("enableJobOrder") is True
    assert conf.argument("overcommit", "overcommit-factor", 1.2) == 1.5
    assert conf.argument("binpack", "binpack.resources.nvidia.com/gpu", 1) == 5
    assert conf.configurations["allocate"] == {"predicateErrorCacheEnable": True}
    assert conf.tier_of("binpack") == 1


def test_hierarchy_switch_defaults_off() -> None:
    option = parse_conf('actions: "allocate"\ntiers: [{plugins: [{name: drf}]}]').plugin("drf")
    assert option is not None
    assert option.enabled("enableHierarchy") is False


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('actions: "enqueue, allocat"\ntiers: []', "failed to find Action allocat"),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: nodeorder, arguments: {speed.weight: 1}}]}]',
            "unknown argument 'speed.weight' for plugin 'nodeorder'",
        ),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, enableMagic: true}]}]',
            "unknown switch 'enableMagic' on plugin 'gang'",
        ),
        (
            'actions: "allocate"\ntiers: []\nconfigurations: [{name: allocate, arguments: {x: 1}}]',
            "unknown argument 'x' for action 'allocate'",
        ),
        ('actions: "allocate"\ntiers: []\nextra: 1', "unknown key 'extra'"),
        ("actions: [allocate]", "'actions' must be a comma-separated string"),
        ("- just a list", "must be a mapping"),
        ("actions: 'a\n  b: [", "not valid YAML"),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: drf, enableHierarchy: true}, '
            "{name: proportion}]}]",
            "proportion and drf with hierarchy enabled conflicts",
        ),
        ('actions: "shuffle"\ntiers: []', "no action Phalanx implements"),
    ],
    ids=[
        "unknown-action",
        "unknown-argument",
        "unknown-switch",
        "unknown-action-argument",
        "unknown-top-level-key",
        "actions-not-a-string",
        "not-a-mapping",
        "bad-yaml",
        "hdrf-with-proportion",
        "only-unimplemented-actions",
    ],
)
def test_bad_conf_is_rejected_with_a_message_naming_the_culprit(text: str, named: str) -> None:
    with pytest.raises(ConfError, match=named.replace("(", r"\(").replace("[", r"\[")):
        parse_conf(text)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ("{name: overcommit, arguments: {overcommit-factor: lots}}", "overcommit-factor"),
        ("{name: nodeorder, arguments: {binpack.weight: 1}}", "binpack.weight"),
        ("{name: sla, arguments: {sla-waiting-time: soon}}", "must be a duration"),
        ("{name: binpack, arguments: {binpack.cpu: [1]}}", "binpack.cpu"),
    ],
    ids=["not-a-number", "argument-of-another-plugin", "bad-duration", "list-value"],
)
def test_unusable_argument_values_are_refused_at_load(arguments: str, named: str) -> None:
    with pytest.raises(ConfError, match=named):
        parse_conf(f'actions: "allocate"\ntiers: [{{plugins: [{arguments}]}}]')


def test_reload_keeps_previous_conf_when_new_text_is_bad() -> None:
    first = load_conf(HELM_CONF)
    assert first.error is None
    assert first.changed
    broken = load_conf('actions: "allocate, shuffle-everything"\ntiers: []', first.conf)
    assert broken.conf == first.conf
    assert broken.error is not None
    assert "shuffle-everything" in str(broken.error)
    assert not broken.changed


@pytest.mark.parametrize(
    ("text", "changed"),
    [(None, False), ("", False), (HELM_CONF, True)],
    ids=["no-file", "empty-configmap", "new-text"],
)
def test_reload_reports_whether_the_conf_changed(text: str | None, changed: bool) -> None:
    result = load_conf(text, DEFAULT_CONF)
    assert result.changed is changed
    assert result.error is None


def test_same_text_reloaded_is_unchanged() -> None:
    first = load_conf(HELM_CONF)
    assert load_conf(HELM_CONF, first.conf).changed is False


def test_plugins_and_actions_phalanx_lacks_are_skipped_and_named_as_volcano_skips_them() -> None:
    conf = parse_conf(
        'actions: "enqueue, allocate, shuffle, backfill"\n'
        "tiers:\n"
        "- plugins: [{name: priority}, {name: tdm, arguments: {tdm.evict.period: 1m}}, {name: gang}]\n"
        "- plugins: [{name: magic, enableMagic: true}, {name: predicates}]\n"
    )
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in tier.plugins] for tier in conf.tiers] == [["priority", "gang"], ["predicates"]]
    assert conf.skipped == (
        "action 'shuffle' is a Volcano action that Phalanx does not implement: skipped",
        "plugin 'tdm' in tier 1 is a Volcano plugin that Phalanx does not implement: skipped",
        "unknown plugin 'magic' in tier 2: skipped; known plugins: " + ", ".join(sorted(PLUGIN_ARGUMENTS)),
    )
