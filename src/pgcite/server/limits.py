"""Limits of the HTTP server: the size of a request body, and requests a minute per caller."""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque

from pgcite.errors import PgciteError


class BodyLimit:
    """ASGI middleware: a body over the limit gets 413, whether its Content-Length says so up front
    or a chunked body runs past it. `larger` maps a path's ending to the limit of those paths."""

    def __init__(self, app, *, limit: int, larger: dict[str, int]) -> None:
        self.app, self.limit, self.larger = app, limit, larger

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = next((size for ending, size in self.larger.items() if scope["path"].endswith(ending)), self.limit)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            if length.isdigit() and int(length) <= DRAIN_LIMIT:
                await _drain(receive)
            await _reply_too_large(send, limit)
            return
        seen, over, started, ended = 0, False, False, False

        async def counted_receive():
            nonlocal seen, over, ended
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                ended = not message.get("more_body", False)
                if seen > limit:
                    over = True
                    raise too_large(limit)
            return message

        async def guarded_send(message) -> None:
            nonlocal started
            if over:  # whatever the app makes of the cut-off body, the answer is 413
                return
            started = True
            await send(message)

        await self.app(scope, counted_receive, guarded_send)
        if over and not started:
            if not ended:
                await _drain(receive, DRAIN_LIMIT - seen)
            await _reply_too_large(send, limit)


# A body refused as too large is still read, up to this many bytes, before the 413 is sent: a
# client that sends its whole body before reading the answer otherwise gets a connection reset
# (the server closing with unread data) instead of the 413. A larger body is not waited for.
DRAIN_LIMIT = 16 << 20


async def _drain(receive, budget: int = DRAIN_LIMIT) -> None:
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def too_large(limit: int) -> PgciteError:
    return PgciteError(f"the request body is over {limit:,} bytes; send less", kind="too_large")


async def _reply_too_large(send, limit: int) -> None:
    body = json.dumps({"error": {"message": str(too_large(limit)), "type": "too_large", "code": "too_large"}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RateLimit:
    """At most `per_minute` requests in any 60 s per caller (0: no limit); over it, 429 with
    Retry-After in seconds."""

    WINDOW = 60.0

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, caller: str) -> None:
        if self.per_minute <= 0:
            return
        now = time.monotonic()
        with self._lock:
            times = self._seen.setdefault(caller, deque())
            while times and times[0] <= now - self.WINDOW:
                times.popleft()
            if len(times) >= self.per_minute:
                wait = math.ceil(times[0] + self.WINDOW - now)
                raise RateLimited(f"over {self.per_minute} requests a minute; try again in {wait} s", wait)
            times.append(now)


class RateLimited(PgciteError):
    kind = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
