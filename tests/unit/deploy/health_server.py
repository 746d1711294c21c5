"""Test helper: a throwaway HTTP server answering /healthz with a chosen status, on a free port.

Used to run the compose and Dockerfile healthcheck commands for real: they must exit 0 when the
service reports healthy and non-zero when it does not, or when nothing listens.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def health_server(status: int) -> Iterator[int]:
    """Serve `status` on every GET for the duration of the block; yields the port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status if self.path == "/healthz" else 404)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"not ok")

        def log_message(self, format: str, *args: object) -> None:
            """No access log on the test's stderr."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
