"""DNS rebinding: a web page on a name its owner points at 127.0.0.1 reaches a server on loopback,
with that name in `Host`, and reads what the server answers (no key is needed there by default).
So on a loopback address the server answers only to loopback names and the ones the operator adds
(`serve_hosts`), on every route; on another address, only to the names listed, when some are.
`/mcp` also refuses an `Origin` on another host, as MCP asks of local servers."""

from __future__ import annotations

import urllib.parse

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from pgcite.server.streams import error_body

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def allowed_hosts(bind: str, listed: str) -> frozenset[str] | None:
    """The host names the server answers to (None: any), from its bind address and the list."""
    names = {name.strip().lower().strip("[]") for name in listed.split(",") if name.strip()}
    bind = bind.strip("[]").lower()
    if bind in LOOPBACK:
        return LOOPBACK | names
    return frozenset(names | {bind}) if names else None


def _hostname(netloc: str) -> str:
    """`example.com:8000` -> `example.com`; `[::1]:8000` -> `::1`."""
    try:
        return (urllib.parse.urlsplit(f"//{netloc}").hostname or "").lower()
    except ValueError:
        return ""


class HostGuard:
    def __init__(self, app: ASGIApp, *, hosts: frozenset[str] | None, mcp_path: str) -> None:
        self.app, self.hosts, self.mcp_path = app, hosts, mcp_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.hosts is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = _hostname(headers.get("host", ""))
        refusal = None
        if host not in self.hosts:
            refusal = JSONResponse(
                error_body(
                    f"this server does not answer to the host name {host or '(none)'!r}; it answers to "
                    f"{', '.join(sorted(self.hosts))}; add the name to PGCITE_SERVE_HOSTS if it is yours",
                    "misdirected_request",
                ),
                status_code=421,
            )
        elif (
            (origin := headers.get("origin"))
            and scope["path"].rstrip("/") == self.mcp_path
            and _hostname(urllib.parse.urlsplit(origin).netloc) not in self.hosts
        ):
            refusal = JSONResponse(
                error_body(f"MCP requests from a web page at {origin} are refused here", "forbidden"),
                status_code=403,
            )
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)
