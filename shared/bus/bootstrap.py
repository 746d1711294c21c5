"""`python -m shared.bus.bootstrap`: create or update the streams, as the bootstrap identity.

The services' own NATS identities may only look the streams up (shared/bus/permissions.py), so a
deployment runs this once before they start: docker compose as a one-shot service, the scheduler
chart as a hook Job, `phalanx up` in-process. Settings come from PHALANX_NATS__URL, __USER,
__PASSWORD, __CREDS_FILE and __TLS_CA_FILE.
"""

from __future__ import annotations

import asyncio

import nats.errors
import structlog
from nats.js.errors import ServiceUnavailableError
from pydantic_settings import SettingsConfigDict

from shared.bus.nats import NatsBus
from shared.config import NatsSettings, ServiceSettings, load_settings


class BootstrapSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="PHALANX_", env_nested_delimiter="__", extra="ignore")


log = structlog.get_logger()
# A NATS cluster that has just started answers JetStream requests only once its members have
# elected a meta leader; until then a request times out or is refused as unavailable.
CLUSTER_FORMING_S = 60.0
NOT_READY = (nats.errors.TimeoutError, nats.errors.NoRespondersError, ServiceUnavailableError)


async def create_streams(settings: NatsSettings, *, patience: float = CLUSTER_FORMING_S) -> None:
    bus = await NatsBus.connect(
        settings.model_copy(update={"manage_streams": True}), name="phalanx-bootstrap"
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    try:
        while True:
            try:
                await bus.ensure_streams()
                return
            except NOT_READY as error:
                if loop.time() > deadline:
                    raise
                log.info("JetStream not answering yet; asking again", error=repr(error))
                await asyncio.sleep(1.0)
    finally:
        await bus.close()


if __name__ == "__main__":
    asyncio.run(create_streams(load_settings(BootstrapSettings).nats))
