"""The Command (bus.volcano.sh/v1alpha1): a one-shot request such as AbortJob or CloseQueue.

Created by users or the CLI, consumed (and deleted) by the controller, which applies the action
to the target Job or Queue. Unlike other objects it has no spec: the fields sit at the top level.
"""

from __future__ import annotations

from typing import Final, Literal

from .common import TopLevelObject, VolcanoModel
from .enums import Action

COMMAND_API_VERSION: Final = "bus.volcano.sh/v1alpha1"


class OwnerReference(VolcanoModel):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class Command(TopLevelObject):
    api_version: Literal["bus.volcano.sh/v1alpha1"] = COMMAND_API_VERSION
    kind: Literal["Command"] = "Command"
    action: Action | None = None
    target: OwnerReference | None = None
    reason: str | None = None
    message: str | None = None
