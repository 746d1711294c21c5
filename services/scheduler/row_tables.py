"""Shell side of the projection: the table each projected kind's rows are upserted into.

projection.py is pure and names a row by its object's kind; the ingester (ingest.py) and the
tools that read the scheduler's tables back (the chaos oracle) look the table up here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.scheduler.device_rows import DEVICE_KINDS
from services.scheduler.projection import ProjectedRow
from services.scheduler.storage_rows import STORAGE_KINDS
from shared.storage import tables

TABLE_OF_KIND: dict[str, type[tables.Base]] = {
    "Node": tables.Node,
    "Queue": tables.Queue,
    "PriorityClass": tables.PriorityClass,
    "PodGroup": tables.PodGroup,
    "Pod": tables.Pod,
    "ConfigMap": tables.SchedulerConfig,
    "PodDisruptionBudget": tables.DisruptionBudget,
    "HyperNode": tables.HyperNode,
    **dict.fromkeys(STORAGE_KINDS, tables.StorageObject),
    **dict.fromkeys(DEVICE_KINDS, tables.DeviceObject),
}


@dataclass(frozen=True)
class Row:
    """A projected row with the table it goes to."""

    table: type[tables.Base]
    key: str
    values: dict[str, Any]


def table_row(projected: ProjectedRow) -> Row:
    return Row(TABLE_OF_KIND[projected.kind], projected.key, projected.values)
