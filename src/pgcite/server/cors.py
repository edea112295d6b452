"""Cross-origin reads, for the Ask-AI widget on a docs site: a web page on another origin may read
`/v1/ask`, `/v1/search`, `/v1/sources`, reopen an answer and send feedback only where a live browser key names that
origin (`pgcite keys create NAME --origins ORIGIN`). The browser asks first (CORS preflight); the
key itself, and that it was made for that origin, is checked on the request (access.reader)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable

import anyio.to_thread
import psycopg
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pgcite.errors import PgciteError
from pgcite.server.streams import error_body

PATHS = re.compile(r"^/v1/(?:ask|search|sources|answers/[^/]+(?:/feedback)?)$")
PREFLIGHT_SECONDS = 600


def page_origin(headers: Headers) -> str | None:
    """The origin of a web page on another site that sent this request; None for the server's own
    page and for clients that are not browsers (they send no Origin)."""
    origin = headers.get("origin")
    # Sec-Fetch-Site is the browser's own word (no script may set it): a proxy that rewrites Host does
    # not turn the server's own page into a stranger.
    if not origin or headers.get("sec-fetch-site") == "same-origin":
        return None
    here = {headers.get("host"), headers.get("x-forwarded-host")}
    return None if urllib.parse.urlsplit(origin).netloc in here else origin


class BrowserOrigins:
    def __init__(self, app: ASGIApp, *, granted: Callable[[str], bool]) -> None:
        self.app, self.granted = app, granted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = page_origin(Headers(scope=scope)) if scope["type"] == "http" else None
        if origin is None or not PATHS.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        try:
            granted = await anyio.to_thread.run_sync(self.granted, origin)
        except (PgciteError, psycopg.Error):  # the database is down: no grant; the request then says why
            granted = False
        if scope["method"] == "OPTIONS" and "access-control-request-method" in Headers(scope=scope):
            response: Response = (
                Response(status_code=204, headers=_preflight(origin))
                if granted
                else JSONResponse(
                    error_body(f"no browser key is made for pages at {origin}", "forbidden"), status_code=403
                )
            )
            await response(scope, receive, send)
            return
        if not granted:
            await self.app(scope, receive, send)
            return

        async def send_granted(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Access-Control-Allow-Origin"] = origin
                headers["Access-Control-Expose-Headers"] = "Retry-After"
                headers.add_vary_header("Origin")
            await send(message)

        await self.app(scope, receive, send_granted)


def _preflight(origin: str) -> dict[str, str]:
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": "GET, POST",
        "Access-Control-Allow-Headers": "authorization, content-type, x-pgcite-client",
        "Access-Control-Max-Age": str(PREFLIGHT_SECONDS),
        "Vary": "Origin",
    }
