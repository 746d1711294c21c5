"""The pure projection names a row by its object's kind; the ingester finds the kind's table in
row_tables.py. The two lists are kept apart so the projection imports no SQLAlchemy: every kind
projected must have a table, or its objects would be dropped at ingest."""

from __future__ import annotations

import pytest

from services.scheduler.projection import PROJECTED_KINDS
from services.scheduler.row_tables import TABLE_OF_KIND

pytestmark = pytest.mark.unit


def test_every_projected_kind_has_the_table_its_rows_go_to() -> None:
    assert set(TABLE_OF_KIND) == set(PROJECTED_KINDS)
