"""Limits of the HTTP server: the size of a request body, and requests a minute per caller (shared by
every server on the database)."""

from __future__ import annotations

import json
import math
import threading

from psycopg_pool import ConnectionPool

from pgcite.config import Settings
from pgcite.errors import PgciteError
from pgcite.store import Store


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
    """At most `per_minute` requests in any 60 s per caller (0: no limit), counted in PostgreSQL so
    that every server on the database shares the count; over it, 429 with Retry-After in seconds."""

    def __init__(self, per_minute: int, settings: Settings) -> None:
        self.per_minute, self._settings = per_minute, settings
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    def check(self, caller: str) -> None:
        if self.per_minute <= 0:
            return
        with self._connections().connection() as conn:
            row = conn.execute("SELECT pgcite_rate_hit(%s, %s)", (caller, self.per_minute)).fetchone()
        wait = math.ceil(row[0]) if row else 0
        if wait > 0:
            raise RateLimited(f"over {self.per_minute} requests a minute; try again in {wait} s", wait)

    def _connections(self) -> ConnectionPool:
        with self._lock:  # a few connections of the server's own login: the query path's may not write
            if self._pool is None:
                dsn, _ = Store.locate(self._settings)
                self._pool = ConnectionPool(
                    dsn, min_size=1, max_size=4, kwargs={"autocommit": True}, timeout=10, name="pgcite-rate", open=True
                )
            return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


class RateLimited(PgciteError):
    kind = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
