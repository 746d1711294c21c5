"""Failpoints are read from PHALANX_FAILPOINTS: each fires its action the number of times asked."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared import failpoints

pytestmark = pytest.mark.unit


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def configure(value: str) -> None:
        monkeypatch.setenv(failpoints.ENV, value)
        monkeypatch.setattr(failpoints, "_points", None)

    return configure


async def test_an_error_failpoint_fires_its_count_then_stays_quiet(configured: Callable[[str], None]) -> None:
    configured("ctl.mid_bind_batch=error:2")
    for _ in range(2):
        with pytest.raises(failpoints.FailpointError, match=r"ctl\.mid_bind_batch"):
            await failpoints.hit("ctl.mid_bind_batch")
    await failpoints.hit("ctl.mid_bind_batch")
    await failpoints.hit("another.point")


def test_entries_parse_with_and_without_a_count() -> None:
    points = failpoints.parse("a.b=sleep(0.5):3, c=crash")
    assert (points["a.b"].action, points["a.b"].seconds, points["a.b"].remaining) == ("sleep", 0.5, 3)
    assert (points["c"].action, points["c"].remaining) == ("crash", None)


def test_a_malformed_entry_is_named() -> None:
    with pytest.raises(ValueError, match=r"PHALANX_FAILPOINTS: 'x=explode'"):
        failpoints.parse("x=explode")
