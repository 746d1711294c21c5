"""Plugin arguments as Volcano parses them: Go `flag` syntax, unknown flags ignored.

Each job plugin (`spec.plugins: {svc: ["--disable-network-policy=true"]}`) reads its options
through `parse_flags`; a malformed or unknown flag stops parsing there, as Go's
`flag.ContinueOnError` does, and the options parsed so far stand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

FlagValue = str | int | bool


def parse_flags(args: Sequence[str], defaults: Mapping[str, FlagValue]) -> dict[str, FlagValue]:
    """`defaults` names the flags and their types; returns the values after `args`."""
    values: dict[str, FlagValue] = dict(defaults)
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            break  # Go stops at the first non-flag argument
        name, has_value, text = arg.lstrip("-").partition("=")
        if name not in defaults:
            break
        default = defaults[name]
        if isinstance(default, bool):
            if not has_value:
                values[name] = True
                continue
            if text.lower() in ("1", "t", "true"):
                values[name] = True
            elif text.lower() in ("0", "f", "false"):
                values[name] = False
            else:
                break
            continue
        if not has_value:
            if position >= len(args):
                break
            text = args[position]
            position += 1
        if isinstance(default, int):
            try:
                values[name] = int(text, 0)
            except ValueError:
                break
        else:
            values[name] = text
    return values


def plugin_args(job: Mapping[str, object], plugin: str) -> list[str] | None:
    """The job's arguments for `plugin`, or None when the job does not use it."""
    spec = job.get("spec")
    plugins = spec.get("plugins") if isinstance(spec, Mapping) else None
    if not isinstance(plugins, Mapping) or plugin not in plugins:
        return None
    return [str(a) for a in plugins[plugin] or ()]
