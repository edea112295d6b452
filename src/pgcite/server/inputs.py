"""A NUL in a request's path or query (`/v1/log?source=%00`, `DELETE /v1/sources/%00`) is the
client's mistake, a 400, not a database error: PostgreSQL's text cannot hold it. Text in a body is
checked where it is used (retrieval.search, the answer log)."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from pgcite.server.streams import error_body


class NulGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and ("\0" in scope["path"] or b"%00" in scope.get("query_string", b"")):
            body = error_body("the request's path or query holds a NUL character (%00); remove it", "bad_request")
            await JSONResponse(body, status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)
