"""The webhook's HTTP edge: a body past the limit is refused before it is read whole, and a
review the pure core cannot handle is answered with a refusal, never a 500."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from services.admission import server
from services.admission.rules import AdmissionContext

pytestmark = pytest.mark.unit


class FixedContext:
    async def load(self, review: dict[str, Any], webhook: str = "validate") -> AdmissionContext:
        return AdmissionContext()


def client() -> TestClient:
    app = server.build_app(FixedContext(), None, max_request_bytes=1000)  # type: ignore[arg-type]
    return TestClient(app)


def test_a_body_past_the_limit_is_refused_with_413() -> None:
    answer = client().post("/validate", content=b"x" * 5000, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    assert "exceeds the limit of 1000 bytes" in answer.json()["response"]["status"]["message"]


def test_a_body_past_the_limit_without_a_declared_length_is_refused_too() -> None:
    def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 500

    answer = client().post("/validate", content=chunks(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 413


def test_a_review_the_core_cannot_handle_is_a_refusal_not_a_500(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> dict[str, Any]:
        raise RecursionError("deep")

    monkeypatch.setattr(server.core, "review", broken)
    review = {"request": {"uid": "u-1", "kind": {"group": "batch.volcano.sh", "kind": "Job"}}}
    answer = client().post("/validate", content=orjson.dumps(review))
    assert answer.status_code == 200
    response = answer.json()["response"]
    assert response["allowed"] is False
    assert response["uid"] == "u-1"
    assert "could not be reviewed: RecursionError" in response["status"]["message"]
