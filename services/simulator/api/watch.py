"""Watch requests: a chunked stream of `{"type": ..., "object": ...}` lines, as the apiserver's.

A watch subscribes to the store before it reads anything, so nothing falls between what it
replays and what it streams. Without a resourceVersion (or with "0") it starts with an ADDED
event per existing object; with one it replays the kept history after it, or ends with an
ERROR event carrying 410 Gone when that history is gone. Selectors apply to both the old and
new object, so an object that stops matching is seen as DELETED. BOOKMARK events are sent
when allowed, and the stream ends after timeoutSeconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from services.simulator.store.api_resources import Kind
from services.simulator.store.errors import ApiError
from services.simulator.store.history import WatchEvent
from services.simulator.store.selectors import Selector
from services.simulator.store.store import Store

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
DEFAULT_TIMEOUT = 1800.0
JSON_HEADERS = [(b"content-type", b"application/json")]


def _line(type_: str, obj: Mapping[str, Any]) -> bytes:
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


class WatchFilter:
    """Which events one watcher sees, and as what type."""

    def __init__(
        self,
        namespace: str | None,
        labels: Selector,
        fields: Selector,
        render: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self._namespace, self._labels, self._fields = namespace, labels, fields
        self._render = render  # kubectl's `get -w` wants each object as a one-row Table
        self._everything = namespace is None and labels.empty and fields.empty and render is None

    def encode(self, type_: str, obj: dict[str, Any]) -> bytes:
        return _line(type_, self._render(obj) if self._render else obj)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj["metadata"]
        if self._namespace is not None and metadata.get("namespace") != self._namespace:
            return False
        return (self._labels.empty or self._labels.matches_labels(metadata.get("labels"))) and (
            self._fields.empty or self._fields.matches_fields(obj)
        )

    def line(self, event: WatchEvent) -> bytes | None:
        if self._everything:
            return event.line()
        now = self.matches(event.object)
        before = event.type == "MODIFIED" and event.old is not None and self.matches(event.old)
        if event.type != "MODIFIED" or event.old is None or (now and before):
            if not now:
                return None
            return event.line() if self._render is None else self.encode(event.type, event.object)
        if now:
            return self.encode("ADDED", event.object)
        if before:
            return self.encode("DELETED", event.object)
        return None


async def serve_watch(
    store: Store,
    kind: Kind,
    watch_filter: WatchFilter,
    params: Mapping[str, str],
    receive: Receive,
    send: Send,
    bookmark_interval: float,
) -> None:
    queue: asyncio.Queue[bytes] = asyncio.Queue()

    def listener(event: WatchEvent) -> None:
        line = watch_filter.line(event)
        if line is not None:
            queue.put_nowait(line)

    unsubscribe = store.subscribe(kind, listener)
    try:
        start = params.get("resourceVersion") or "0"
        # A streaming list (sendInitialEvents=true) starts with the current objects whatever
        # the version, and marks their end with an annotated bookmark.
        streaming_list = params.get("sendInitialEvents") == "true"
        try:
            if start == "0" or streaming_list:
                replay = [
                    watch_filter.encode("ADDED", obj)
                    for obj in store.iterate(kind)
                    if watch_filter.matches(obj)
                ]
                if streaming_list:
                    replay.append(_bookmark(kind, store, initial_events_end=True))
            else:
                replay = [
                    line
                    for e in store.events_since(kind, _version(start))
                    if (line := watch_filter.line(e)) is not None
                ]
        except ApiError as error:
            await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS})
            await send({"type": "http.response.body", "body": _line("ERROR", error.to_status())})
            return
        await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS})
        if replay:
            await send({"type": "http.response.body", "body": b"".join(replay), "more_body": True})
        bookmarks = params.get("allowWatchBookmarks") in ("true", "1")
        timeout = float(params.get("timeoutSeconds") or DEFAULT_TIMEOUT)
        await _stream(store, kind, queue, receive, send, timeout, bookmark_interval if bookmarks else None)
    finally:
        unsubscribe()


def _version(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, "BadRequest", f"invalid resource version: {text!r}") from None


async def _stream(
    store: Store,
    kind: Kind,
    queue: asyncio.Queue[bytes],
    receive: Receive,
    send: Send,
    duration: float,
    bookmark_interval: float | None,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + duration
    next_bookmark = loop.time() + bookmark_interval if bookmark_interval else float("inf")
    disconnected = asyncio.ensure_future(_disconnection(receive))
    try:
        while True:
            now = loop.time()
            if now >= deadline:
                break
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait(
                {getter, disconnected},
                timeout=min(deadline, next_bookmark) - now,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if disconnected in done:
                getter.cancel()
                return
            if getter in done:
                lines = [getter.result()]
                while not queue.empty():
                    lines.append(queue.get_nowait())
                await send({"type": "http.response.body", "body": b"".join(lines), "more_body": True})
            else:
                getter.cancel()
            if bookmark_interval and loop.time() >= next_bookmark and queue.empty():
                await send(
                    {
                        "type": "http.response.body",
                        "body": _bookmark(kind, store),
                        "more_body": True,
                    }
                )
                next_bookmark = loop.time() + bookmark_interval
        leftover = [queue.get_nowait() for _ in range(queue.qsize())]
        if leftover:
            await send({"type": "http.response.body", "body": b"".join(leftover), "more_body": True})
        if bookmark_interval:
            await send({"type": "http.response.body", "body": _bookmark(kind, store), "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        disconnected.cancel()


async def _disconnection(receive: Receive) -> None:
    # The first message of a GET is its (empty) body; only http.disconnect ends the watch.
    while (await receive())["type"] != "http.disconnect":
        pass


def _bookmark(kind: Kind, store: Store, *, initial_events_end: bool = False) -> bytes:
    # Every event up to the current version has been queued synchronously and the queue is
    # empty, so this version is one the client may safely resume from.
    metadata: dict[str, Any] = {"resourceVersion": str(store.resource_version)}
    if initial_events_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return _line("BOOKMARK", {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": metadata})
