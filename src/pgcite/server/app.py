"""`pgcite serve`: the HTTP API over the core (FastAPI on uvicorn).

Every error is JSON in OpenAI's shape, `{"error": {"message", "type", "code"}}`, with the status
its kind maps to; a stream that fails after it started ends with an `error` event instead."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import Iterator
from typing import Any, Literal

import anyio
import anyio.to_thread
import psycopg
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.routing import Route

from pgcite import shapes
from pgcite.access import Caller
from pgcite.agents import http as agents_http
from pgcite.answer.flow import Answer
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, first_line
from pgcite.learn.log import Origin
from pgcite.messaging.discord_http import add_discord_routes
from pgcite.messaging.http import add_slack_routes
from pgcite.retrieval.search import MAX_K
from pgcite.server import webhooks
from pgcite.server.admin import add_admin_routes
from pgcite.server.chat import add_chat_routes, is_follow_up
from pgcite.server.cors import BrowserOrigins, page_origin
from pgcite.server.hosts import HostGuard, allowed_hosts
from pgcite.server.inputs import NulGuard
from pgcite.server.jobs import Jobs
from pgcite.server.limits import BodyLimit, RateLimit, RateLimited
from pgcite.server.llms import add_llms_routes
from pgcite.server.log import add_log_routes
from pgcite.server.streams import error_body, event_stream, guarded, sse
from pgcite.server.web import add_web_routes
from pgcite.store import SEARCH_MODES
from pgcite.store.health import RETRY_AFTER, DatabaseDown
from pgcite.vocabulary import MAX_QUESTION_CHARS, Delta, SearchFilter, Sources

log = logging.getLogger("pgcite.server.app")

MAX_NAME_CHARS = 200  # a source's name or a version label
MAX_LANGUAGE_CHARS = 35  # BCP 47's longest tags
CLIENT_HEADER = "x-pgcite-client"  # "page" or "widget": the log tells their questions apart
Mode = Literal[SEARCH_MODES]  # type: ignore[valid-type]  # "vector" | "text" | "hybrid"


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(error_body(message, kind), status_code=status)


def _one_line_validation(exc: RequestValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if isinstance(p, str) and p not in ("body", "query"))
    return f"{where or 'request body'}: {first.get('msg', 'invalid')}".replace("\n", " ")


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    source: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    path: str | None = Field(default=None, max_length=MAX_QUESTION_CHARS)
    version: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    # A language tag; default: the question's own where a source has it, else the source's default.
    language: str | None = Field(default=None, max_length=MAX_LANGUAGE_CHARS)
    threshold: float | None = Field(default=None, gt=0, le=2)
    context: int = Field(default=5, ge=1, le=20)
    mode: Mode | None = None
    stream: bool = False
    # The question before, in a conversation: a follow-up ("and on Windows?") is asked with it.
    previous: str | None = Field(default=None, max_length=MAX_QUESTION_CHARS)


def create_app(core: Pgcite, *, host: str = "127.0.0.1", owned: bool = False) -> FastAPI:
    """The app; `host`: the address it is served on (on loopback it answers only to loopback names);
    owned: the app closes `core` when it stops (a worker's)."""
    jobs = Jobs(core)
    limit = RateLimit(core.settings.serve_rate_limit, core.settings)
    # An outage is one line of ours (store/health.py), not the pool's warning at every reconnect attempt.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    mcp = agents_http.streamable(core)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        async with mcp.session_manager.run():
            yield
        await anyio.to_thread.run_sync(jobs.close)  # a running job finishes; queued ones stay in the database
        for bot in (slack, discord):
            if bot is not None:
                await anyio.to_thread.run_sync(bot.close)
        limit.close()
        if owned:
            core.close()

    app = FastAPI(title="pgcite", summary="Cited answers from your documentation.", version="0.1.0", lifespan=lifespan)
    app.add_middleware(NulGuard)
    app.add_middleware(BrowserOrigins, granted=core.origin_has_key)
    app.add_middleware(
        BodyLimit,
        limit=core.settings.serve_max_request_bytes,
        larger={"/ingest": core.settings.serve_max_upload_bytes, "/webhook": webhooks.MAX_BYTES},
    )
    # Outermost: a request to a name that is not this server's gets no further (DNS rebinding).
    app.add_middleware(HostGuard, hosts=allowed_hosts(host, core.settings.serve_hosts), mcp_path=agents_http.PATH)

    @app.exception_handler(PgciteError)
    async def _pgcite_error(request: Request, exc: PgciteError) -> JSONResponse:
        response = _error(exc.status, str(exc), exc.kind)
        if exc.kind == "unauthorized":
            response.headers["WWW-Authenticate"] = "Bearer"
        if isinstance(exc, RateLimited | DatabaseDown):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(psycopg.Error)
    async def _database_error(request: Request, exc: psycopg.Error) -> JSONResponse:
        first = first_line(exc)
        response = _error(503, f"database: {first}; check the server and try again", "unavailable")
        response.headers["Retry-After"] = str(RETRY_AFTER)
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _one_line_validation(exc), "invalid_request")

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        # 400: a body that is not UTF-8, or JSON nested too deep to parse (FastAPI's own refusal).
        kind = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(exc.status_code, str(exc.detail), kind)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, f"internal error ({exc.__class__.__name__}); the server log has the details", "internal")

    @app.get("/healthz")
    def healthz() -> dict:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        """Ready to answer: the database answers, its schema is current, and the model is loaded."""
        checks = {"database": False, "schema": False, "model": core.model_loaded}
        try:
            status = core.status()
            checks["database"] = True
            checks["schema"] = status.schema_current
        except PgciteError as exc:
            response = _error(503, str(exc), exc.kind)
            response.headers["Retry-After"] = str(RETRY_AFTER)
            return response
        ready = all(checks.values())
        log = core.answer_log
        return JSONResponse(
            {
                "status": "ready" if ready else "not ready",
                "checks": checks,
                "answer_log": {
                    "on": log is not None,
                    "dropped": log.dropped if log else 0,
                    "last_error": log.last_error if log else "",
                },
            },
            status_code=200 if ready else 503,
        )

    def access(request: Request, write: bool) -> Caller:
        address = _address(request)
        try:
            caller = core.caller(request.headers.get("authorization"), write=write, origin=page_origin(request.headers))
        except PgciteError:
            limit.check(address)  # refused attempts count too, per address
            raise
        # A browser key serves every visitor of a docs site: each address has the limit of its own.
        bucket = f"key {caller.name}" if caller.name else address
        limit.check(f"{bucket} {address}" if caller.browser else bucket)
        return caller

    def read_access(request: Request) -> Caller:
        return access(request, write=False)

    def write_access(request: Request) -> Caller:
        return access(request, write=True)

    @app.get("/v1/sources")
    def sources(caller: Caller = Depends(read_access)) -> dict:
        return {"sources": [shapes.source(s, admin=caller.admin) for s in core.sources(caller.sources)]}

    @app.get("/v1/search")
    def search(
        q: str = Query(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question."),
        k: int = Query(5, ge=1, le=MAX_K),
        source: str | None = None,
        path: str | None = None,
        version: str | None = None,
        language: str | None = Query(None, max_length=MAX_LANGUAGE_CHARS),
        mode: Mode | None = None,
        rerank: bool = Query(False, description="Let pgcite's reader order the results too, as ask does."),
        caller: Caller = Depends(read_access),
    ) -> dict:
        """The `pgcite search --json` object."""
        core.require_source(source, caller.sources)
        filters = SearchFilter(
            source=source, path_prefix=path, version=version, language=language, allowed_sources=caller.sources
        )
        hits = core.search(q, k=k, mode=mode, filters=filters, rerank=rerank)
        found = shapes.search(q, hits)
        # Nothing found because of a version or a language: say which (the CLI prints the same).
        return found if hits else found | ({"note": why} if (why := core.why_nothing(filters)) else {})

    @app.post("/v1/ask")
    def ask(body: AskRequest, request: Request, caller: Caller = Depends(read_access)):
        """The `pgcite ask --json` object; with `stream`, Server-Sent Events: `sources`, `delta`s,
        `answer`, `done` (or `error`)."""
        core.require_source(body.source, caller.sources)
        client = request.headers.get(CLIENT_HEADER)
        channel = client if client in ("page", "widget") else "api"
        question = body.question
        if body.previous and is_follow_up(question):
            question = f"{body.previous} {question}"
        events = core.ask_stream(
            question,
            threshold=body.threshold,
            context=body.context,
            mode=body.mode,
            filters=SearchFilter(
                source=body.source,
                path_prefix=body.path,
                version=body.version,
                language=body.language,
                exclude_flagged=True,
                allowed_sources=caller.sources,
            ),
            origin=Origin(channel, caller.name),
        )
        if not body.stream:
            *_, answer = events
            assert isinstance(answer, Answer)
            return shapes.answer(answer)
        first = next(events)  # bad input and a database that is down fail here, with their status

        def frames() -> Iterator[str]:
            for event in itertools.chain([first], events):
                yield _ask_event(event)
            yield sse("done", {})

        return event_stream(guarded(frames(), events, lambda error: sse("error", error)))

    # An ASGI app of its own (the SDK's transport), behind the same key check as /v1/*.
    endpoint = agents_http.Endpoint(mcp.session_manager, read_access)
    app.router.routes.append(Route(agents_http.PATH, endpoint, methods=["GET", "POST", "DELETE"]))
    add_chat_routes(app, core, read_access)
    add_admin_routes(app, core, jobs, write_access, lambda request: limit.check(_address(request)))
    add_log_routes(app, core, read_access, write_access)
    add_web_routes(app)
    add_llms_routes(app, core, read_access)
    # Slack's Events API and button clicks (docs/slack.md), when the app's signing secret is set.
    slack = add_slack_routes(app, core, is_follow_up) if core.settings.slack_signing_secret else None
    # Discord's interactions (docs/discord.md), when the application's public key is set.
    discord = add_discord_routes(app, core) if core.settings.discord_public_key else None
    return app


def _address(request: Request) -> str:
    """A client's rate-limit bucket when it has no key."""
    return f"address {request.client.host if request.client else '-'}"


def _ask_event(event) -> str:
    if isinstance(event, Sources):
        return sse(
            "sources",
            {
                "sources": [shapes.passage(p) for p in event.passages],
                "dropped": [shapes.dropped(d) for d in event.dropped],
            },
        )
    if isinstance(event, Delta):
        return sse("delta", {"text": event.text})
    assert isinstance(event, Answer)
    return sse("answer", shapes.answer(event))


_HOST = "PGCITE_SERVE_HOST"  # the address, for the workers' apps (uvicorn starts them from an import)


def serve(core: Pgcite | None, host: str, port: int, workers: int = 1, trusted_proxies: str = "") -> None:
    """Serve `core`; with several workers, each process makes its own (worker_app) on one socket.
    trusted_proxies: whose X-Forwarded-* headers uvicorn believes (by default it believes 127.0.0.1's)."""
    import uvicorn

    logging.getLogger("pgcite").setLevel(logging.INFO)  # a job's start, end or failure is one line each
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": "info",
        "access_log": True,
        "proxy_headers": bool(trusted_proxies.strip()),
        "forwarded_allow_ips": trusted_proxies.strip() or None,
    }
    if workers > 1:
        os.environ[_HOST] = host
        uvicorn.run("pgcite.server.app:worker_app", factory=True, workers=workers, **options)
        return
    assert core is not None
    uvicorn.run(create_app(core, host=host), **options)


def worker_app() -> FastAPI:
    """One worker process of `pgcite serve --workers N`: its own core (settings from the environment
    and pgcite.toml, as the command read them), model loaded, closed when the worker stops."""
    from pgcite.config import load_settings

    logging.getLogger("pgcite").setLevel(logging.INFO)
    core = Pgcite(load_settings())
    core.warm_up()
    return create_app(core, host=os.environ.get(_HOST, "127.0.0.1"), owned=True)
