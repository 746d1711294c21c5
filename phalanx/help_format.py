"""`--help` without a `<bool>` after flags that take no value.

typer's rich help (0.2x) writes a type column for every option, and for a plain flag (`--detach`,
`--help`) that reads `<bool>`, as if the flag wanted a value. Applied once, when the CLI is built.
"""

from __future__ import annotations

from typing import Any

import typer.core


def hide_flag_types() -> None:
    option = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "hides_flags", False):
        return  # a typer without the type column, or already applied

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if self.is_flag and not self.count else shown(self, ctx)

    display_type_rich.hides_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich  # type: ignore[method-assign]
