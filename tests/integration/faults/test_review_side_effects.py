"""reliability.md §6.5 T29: a duplicate and a dry-run AdmissionReview have no side effect, on real
PostgreSQL and NATS.

The API server may call a webhook twice for one request (a retry after a timeout, a reinvocation)
and calls it for `kubectl --dry-run=server`; admission is registered `sideEffects: None`. The same
review sent twice gets the same answer and leaves one audit record (its id is the review's uid);
a dry-run review is answered as the real one would be and leaves nothing at all: no row in any
table, no message on any stream. Persistence of a Job happens only once the watcher sees it made.

Found and fixed: a dry-run review was audited as "admitted" or "denied", so an operator reading
`phalanx events watch` saw an admission for an object that was never created.
"""

from __future__ import annotations

from typing import Any

import httpx
import nats
import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.messages import subjects
from shared.storage.tables import metadata
from tests.integration.admission.test_server import webhook as webhook
from tests.unit.admission.builders import admission_review, job, task
from tests.waiting import until

pytestmark = pytest.mark.integration


async def rows(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as connection:
        return {
            name: int((await connection.execute(select(func.count()).select_from(table))).scalar_one())
            for name, table in metadata.tables.items()
        }


async def stream_sequences(nats_url: str) -> dict[str, int]:
    connection = await nats.connect(nats_url)
    try:
        return {
            info.config.name or "": info.state.last_seq
            for info in await connection.jetstream().streams_info()
        }
    finally:
        await connection.close()


async def answer(http: httpx.AsyncClient, path: str, review: dict[str, Any]) -> dict[str, Any]:
    reply = await http.post(path, content=orjson.dumps(review), headers={"Content-Type": "application/json"})
    assert reply.status_code == 200
    return reply.json()  # type: ignore[no-any-return]


ADMITTED = job("twice", tasks=[task(replicas=2)], minAvailable=2, queue="default")
DENIED = job("denied", tasks=[task(replicas=1)], minAvailable=5, queue="default")


async def test_a_review_sent_twice_is_answered_the_same_and_audited_once(
    webhook: httpx.AsyncClient, engine: AsyncEngine, nats_url: str
) -> None:
    tables_before, streams_before = await rows(engine), await stream_sequences(nats_url)
    for obj, uid in (
        (ADMITTED, "11111111-0000-0000-0000-000000000001"),
        (DENIED, "11111111-0000-0000-0000-000000000002"),
    ):
        review = admission_review(obj, uid=uid)
        for path in ("/mutate", "/validate"):
            first, second = await answer(webhook, path, review), await answer(webhook, path, review)
            assert first == second, f"{path}: the same review, the same answer"

    # Each validation is audited once: the record's id is the review's uid, so the second copy
    # is dropped by the stream's duplicate window.
    async def audited() -> int:
        return (await stream_sequences(nats_url))[subjects.AUDIT_STREAM] - streams_before[
            subjects.AUDIT_STREAM
        ]

    assert await until(audited, "the audit records of the two reviews") == 2
    assert await rows(engine) == tables_before, "admission wrote nothing"
    after = await stream_sequences(nats_url)
    assert {name: seq for name, seq in after.items() if name != subjects.AUDIT_STREAM} == {
        name: seq for name, seq in streams_before.items() if name != subjects.AUDIT_STREAM
    }, "nothing but the audit records was published"


async def test_a_dry_run_review_is_answered_as_the_real_one_and_leaves_nothing(
    webhook: httpx.AsyncClient, engine: AsyncEngine, nats_url: str
) -> None:
    for index, obj in enumerate((ADMITTED, DENIED)):
        real = admission_review(obj, uid=f"22222222-0000-0000-0000-00000000000{index}")
        dry = admission_review(obj, uid=f"33333333-0000-0000-0000-00000000000{index}", dryRun=True)
        tables_before, streams_before = await rows(engine), await stream_sequences(nats_url)
        for path in ("/mutate", "/validate"):
            dry_answer = (await answer(webhook, path, dry))["response"]
            real_answer = (await answer(webhook, path, real))["response"]
            assert {k: v for k, v in dry_answer.items() if k != "uid"} == {
                k: v for k, v in real_answer.items() if k != "uid"
            }, f"{path}: a dry run is decided as the real request would be"
            assert dry_answer["uid"] == dry["request"]["uid"]
        # The real review's audit record arrives; had the dry run's been published, it would
        # have gone first (same connection, published in order).
        await until(lambda review=real: _audited(nats_url, review), "the real review's audit record")
        assert not await _audited(nats_url, dry), "the dry run was audited"
        grown = await _grew(nats_url, streams_before)
        assert grown == {subjects.AUDIT_STREAM: 1}, "the real review's record, and nothing else"
        assert await rows(engine) == tables_before, "nothing written"


async def _audited(nats_url: str, review: dict[str, Any]) -> bool:
    """Whether the audit stream holds the record of `review` (its id names the review's uid)."""
    wanted = f"admission:{review['request']['uid']}"
    connection = await nats.connect(nats_url)
    try:
        js = connection.jetstream()
        state = (await js.stream_info(subjects.AUDIT_STREAM)).state
        for sequence in range(state.first_seq, state.last_seq + 1):
            message = await js.get_msg(subjects.AUDIT_STREAM, sequence)
            if orjson.loads(message.data or b"{}").get("id") == wanted:
                return True
        return False
    finally:
        await connection.close()


async def _grew(nats_url: str, before: dict[str, int]) -> dict[str, int]:
    after = await stream_sequences(nats_url)
    return {name: seq - before.get(name, 0) for name, seq in after.items() if seq != before.get(name, 0)}
