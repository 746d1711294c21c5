"""`python -m shared.bus.bootstrap`: create or update the streams, as the bootstrap identity.

The services' own NATS identities may only look the streams up (shared/bus/permissions.py), so a
deployment runs this once before they start: docker compose as a one-shot service, the scheduler
chart as a hook Job, `phalanx up` in-process. Settings come from PHALANX_NATS__URL, __USER,
__PASSWORD, __CREDS_FILE and __TLS_CA_FILE.
"""

from __future__ import annotations

import asyncio

from pydantic_settings import SettingsConfigDict

from shared.bus.nats import Bus
from shared.config import NatsSettings, ServiceSettings, load_settings


class BootstrapSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="PHALANX_", env_nested_delimiter="__", extra="ignore")


async def create_streams(settings: NatsSettings) -> None:
    bus = await Bus.connect(settings.model_copy(update={"manage_streams": True}), name="phalanx-bootstrap")
    try:
        await bus.ensure_streams()
    finally:
        await bus.close()


if __name__ == "__main__":
    asyncio.run(create_streams(load_settings(BootstrapSettings).nats))
