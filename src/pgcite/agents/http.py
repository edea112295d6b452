"""The MCP server at `/mcp` on `pgcite serve`, over streamable HTTP.

Stateless (no session is kept between requests), so any replica behind a load balancer answers any
request. The bearer key is checked before the SDK sees the request, exactly as on `/v1/*`: its
refusals are the API's JSON errors, and the tools read the caller's scope from the request. Host
and Origin are the server's own guard's (server/hosts.py), on every route alike."""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from pgcite.access import Caller
from pgcite.agents.tools import build
from pgcite.core import Pgcite
from pgcite.errors import PgciteError

PATH = "/mcp"
_CALLER = "pgcite.caller"  # the ASGI scope key the checked caller travels under


def caller_of(ctx: Context) -> Caller:
    """The caller `Endpoint` checked for this request; none means a request that did not pass it."""
    request = ctx.request_context.request
    caller = request.scope.get(_CALLER) if isinstance(request, Request) else None
    if not isinstance(caller, Caller):
        raise ToolError("unauthorized: no checked API key on this request")
    return caller


class Endpoint:
    """The ASGI app behind the `/mcp` route: the key first, then the SDK's transport."""

    def __init__(self, sessions: StreamableHTTPSessionManager, authorize: Callable[[Request], Caller]) -> None:
        self.sessions, self.authorize = sessions, authorize

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A refusal raises PgciteError here, before any response: the app's handler answers it.
        request = Request(scope)
        scope[_CALLER] = await anyio.to_thread.run_sync(self.authorize, request)
        if request.method == "GET":
            # The stream a GET opens is for messages the server starts, and pgcite starts none: MCP
            # lets a server answer 405, and an idle stream would hold a connection for good.
            raise PgciteError(
                "this MCP server sends nothing unasked, so it opens no stream on GET; POST JSON-RPC messages",
                kind="method_not_allowed",
            )
        kind = request.headers.get("content-type", "")
        if request.method == "POST" and not kind.lower().startswith("application/json"):
            raise PgciteError(
                f"an MCP message is JSON: send it as application/json (got {kind or 'no type'!r})",
                kind="unsupported_media_type",
            )
        await self.sessions.handle_request(scope, receive, send)


def streamable(core: Pgcite) -> MCPServer:
    """The server for HTTP. The SDK's own Host and Origin check is left off (its refusals are plain
    text): the app's guard does the same for every route, in JSON."""
    server = build(core, caller_of)
    server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, host="0.0.0.0")
    return server
