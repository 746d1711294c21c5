"""The retry vocabulary every consumer speaks; the bus maps it to JetStream acknowledgements.

A handler raises `TemporaryError` when trying again later may succeed (the API server is down, a
conflict), `PermanentError` when it never will (a malformed message); anything else is treated as
temporary until the delivery limit, then dead-lettered.
"""

from __future__ import annotations


class TemporaryError(Exception):
    def __init__(self, message: str, *, delay: float = 1.0) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(Exception):
    """Retrying cannot help; the message goes to the dead-letter subject with this reason."""
