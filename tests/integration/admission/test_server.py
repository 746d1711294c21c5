"""Admission's HTTP shell on real PostgreSQL and NATS: a review goes in over HTTP, the context comes
from the database, the answer comes back as an AdmissionReview, and a validation's verdict is on the
audit stream (`audit.admission.*`), as the API server and `phalanx events watch` see them."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import nats
import orjson
import pytest
from nats.js.errors import NotFoundError
from sqlalchemy.ext.asyncio import create_async_engine

from services.admission.app import build
from services.admission.settings import AdmissionSettings
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.messages import subjects
from tests.unit.admission.builders import admission_review, job, task
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture
async def webhook(database_url: str, nats_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The webhook app from the composition root (`services.admission.app.build`), minus TLS and
    the API server."""
    engine = create_async_engine(database_url)
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-admission")
    await bus.ensure_streams()
    settings = AdmissionSettings(max_request_bytes=1 << 20, scheduler_name="volcano")
    app = build(settings, bus=bus, store=engine, kube=None).app
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://webhook"
        ) as http:
            yield http
    finally:
        await bus.close()
        await engine.dispose()


async def post(http: httpx.AsyncClient, path: str, review: dict[str, Any]) -> dict[str, Any]:
    answer = await http.post(path, content=orjson.dumps(review), headers={"Content-Type": "application/json"})
    assert answer.status_code == 200
    return answer.json()["response"]  # type: ignore[no-any-return]


async def audited(nats_url: str, subject: str) -> dict[str, Any] | None:
    connection = await nats.connect(nats_url)
    try:
        message = await connection.jetstream().get_last_msg(subjects.AUDIT_STREAM, subject)
    except NotFoundError:
        return None
    finally:
        await connection.close()
    return orjson.loads(message.data)["data"]  # type: ignore[no-any-return]


async def test_a_job_is_defaulted_by_mutate_with_a_json_patch(webhook: httpx.AsyncClient) -> None:
    response = await post(webhook, "/mutate", admission_review(job("defaulted", tasks=[task(replicas=3)])))
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = orjson.loads(base64.b64decode(response["patch"]))
    assert {"op": "add", "path": "/spec/minAvailable", "value": 3} in patch


async def test_a_refused_job_names_the_field_and_is_audited(
    webhook: httpx.AsyncClient, nats_url: str
) -> None:
    refused = job("too-few", tasks=[task(replicas=1)], minAvailable=5, queue="default")
    response = await post(webhook, "/validate", admission_review(refused))
    assert response["allowed"] is False
    causes = response["status"]["details"]["causes"]
    assert "spec.minAvailable" in [cause["field"] for cause in causes]

    record = await until(
        lambda: audited(nats_url, subjects.audit("admission", "denied", "default", "too-few")),
        "the denial on the audit stream",
    )
    assert record["outcome"] == "denied"
    assert record["kind"] == "Job"
    assert "minAvailable" in record["message"]
