"""What /v1/ask and the chat completions share: the error body every failure has (OpenAI's shape,
errors.error_body), and Server-Sent Event streams that end with an error frame when they fail after
the status line."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Generator, Iterator

import anyio
import anyio.to_thread
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool

from pgcite.errors import PgciteError, error_body

log = logging.getLogger("pgcite.server.streams")

_STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def guarded(
    frames: Iterator[str], events: Iterator, error_frame: Callable[[dict], str], last: str = ""
) -> Generator[str, None, None]:
    """`frames`, then `last`; a failure mid-stream (the status line is gone by then) becomes one
    error frame before `last`. The answer's `events` are closed however the stream ends."""
    try:
        yield from frames
    except PgciteError as exc:
        yield error_frame(error_body(str(exc), exc.kind))
    except Exception as exc:
        log.exception("stream failed")
        yield error_frame(error_body(f"internal error ({exc.__class__.__name__})", "internal"))
    finally:
        if isinstance(events, Generator):  # ask_stream's: closing it ends the request to the chat model
            events.close()
    if last:
        yield last


def event_stream(frames: Generator[str, None, None]) -> StreamingResponse:
    """Stream a generator's frames from worker threads. When the client hangs up, the generator
    is closed as soon as its current step ends: that closes the answer's events, and with them
    the request to the chat model, so no more is generated for nobody."""

    async def body():
        try:
            async for frame in iterate_in_threadpool(frames):
                yield frame
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(frames.close)

    return StreamingResponse(body(), media_type="text/event-stream", headers=_STREAM_HEADERS)
