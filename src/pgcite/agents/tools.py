"""The MCP server's tools (official `mcp` SDK): search_docs, ask_docs, read_page, read_section and
list_sources, each with structured output (a JSON schema) and a text an agent can read as is.

Whoever calls decides what exists: `caller_of` gives the API key's scope (the CLI's full view over
stdio), and a source outside it is reported exactly as one that does not exist."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import psycopg
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError

from pgcite.access import Caller
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, first_line
from pgcite.learn.log import Origin
from pgcite.retrieval.search import MAX_K
from pgcite.vocabulary import MAX_QUESTION_CHARS, SearchFilter, SearchHit

CHANNEL = "mcp"  # the answer log's channel for every call that asks something
CallerOf = Callable[[Context], Caller]

INSTRUCTIONS = (
    "Answers questions about this team's documentation. Prefer ask_docs: its answer carries a "
    "checked [n] citation after each claim and a Sources list with each section's published URL, or "
    "refused=true when the documents do not say (then do not guess; say so). Use search_docs to "
    "find sections yourself, read_section or read_page to read one whole, and list_sources for what "
    "is here. Quote the URLs you were given; they point at the published docs."
)

# The arguments search_docs and ask_docs share.
SourceArg = Annotated[str | None, Field(description="Only this source (list_sources names them).")]
VersionArg = Annotated[str | None, Field(description="A version label; default: each source's default version.")]
LanguageArg = Annotated[
    str | None,
    Field(
        max_length=35,
        description="A language tag (en, fr, pt-br); default: the question's own where a source has it, else "
        "the source's default language.",
    ),
]
_READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


class Section(BaseModel):
    id: str = Field(description="The section's id, for read_section.")
    source: str
    path: str = Field(description="The page's file in its source.")
    title: str = Field(description="The page's title.")
    heading: str = Field(description="Page title > heading > subheading: where the section sits.")
    url: str = Field(description="Where it is published, with its anchor ('' when the source has no base URL).")
    text: str
    score: float = Field(description="Cosine similarity to the query, 0 to 1.")


class CitedSection(Section):
    number: int = Field(description="The n of [n] in the answer.")


class SearchResult(BaseModel):
    query: str
    sections: list[Section]


class AskResult(BaseModel):
    question: str
    answer: str = Field(description="The answer with [n] after each claim, or 'Not in the documents.'.")
    refused: bool = Field(description="True when the documents do not answer the question.")
    citations: list[int] = Field(description="The numbers cited in the answer.")
    sources: list[CitedSection] = Field(description="The sections the answer was written from, numbered.")
    closest: list[Section] = Field(description="On a refusal: the sections that came closest.")
    checks: dict[str, Any] = Field(
        description="What the checker found: unknown citations, uncited or unsupported claims, the citations "
        "pgcite added, foreign links; `passed`: every claim cites a section that supports it."
    )
    answer_id: str | None = Field(description="The answer log's id, for feedback.")


class PageResult(BaseModel):
    source: str
    path: str
    title: str
    url: str
    version: str
    markdown: str = Field(description="The page as published: cleaned Markdown, includes read in.")


class SectionResult(BaseModel):
    id: str
    source: str
    path: str
    title: str
    heading_path: list[str]
    url: str
    version: str
    markdown: str


class SourceEntry(BaseModel):
    name: str
    site: str = Field(description="The site generator it was read as (mkdocs, docusaurus, vitepress, ...).")
    base_url: str
    default_version: str = Field(description="The version searched unless one is named.")
    versions: list[str]
    default_language: str = Field(description="The language read unless the question or the caller names another.")
    languages: dict[str, int] = Field(description="Its languages, each with its number of pages.")
    pages: int
    sections: int


class SourcesResult(BaseModel):
    sources: list[SourceEntry]


def _section(hit: SearchHit) -> Section:
    return Section(
        id=hit.id,
        source=hit.source,
        path=hit.path,
        title=hit.title,
        heading=hit.breadcrumb or hit.title,
        url=hit.url,
        text=hit.content,
        score=round(hit.score, 4),
    )


def _result(text: str, data: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data.model_dump(mode="json")
    )


def _reported(tool: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """pgcite's own one-line errors reach the agent as a tool error; anything else is the SDK's
    generic one (and the server log's traceback)."""

    @functools.wraps(tool)
    def run(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return tool(*args, **kwargs)
        except PgciteError as exc:
            raise ToolError(str(exc)) from None
        except psycopg.Error as exc:
            raise ToolError(f"database: {first_line(exc)}; try again") from None

    return run


def _listing(sections: list[Section], numbers: list[int] | None = None) -> str:
    lines = []
    for i, s in enumerate(sections):
        n = numbers[i] if numbers else i + 1
        lines.append(f"[{n}] {s.heading}" + (f" <{s.url}>" if s.url else "") + f" (id {s.id})")
    return "\n".join(lines)


class _OneLineErrors(MCPServer):
    """The SDK's server, with arguments that fail their schema reported in one line (pydantic's own
    text takes several, with a link), naming each argument and what it must be."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            wrong = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                for error in cause.errors()
            )
            raise ToolError(f"Error executing tool {name}: {wrong}; fix the arguments and call again") from cause

    async def run_stdio_async(self) -> None:
        """As the SDK's, but a line that is not a JSON-RPC message gets the error JSON-RPC asks for
        (-32700 for text that is not JSON, -32600 for JSON that is no message), where the SDK's stdio
        transport answers nothing and the client waits."""
        async with stdio_server() as (read_stream, write_stream):
            checked_in, checked = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def answer_malformed() -> None:
                async with checked_in:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await write_stream.send(SessionMessage(_malformed(item)))
                        else:
                            await checked_in.send(item)

            async with anyio.create_task_group() as group:
                group.start_soon(answer_malformed)
                server = self._lowlevel_server
                await server.run(checked, write_stream, server.create_initialization_options())
                group.cancel_scope.cancel()


def _malformed(exc: Exception) -> JSONRPCError:
    not_json = isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors())
    if not_json:
        error = ErrorData(
            code=PARSE_ERROR, message="Parse error: the line is not JSON; send one JSON-RPC message a line"
        )
    else:
        error = ErrorData(
            code=INVALID_REQUEST, message="Invalid Request: the line is JSON but not a JSON-RPC 2.0 message"
        )
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


def build(core: Pgcite, caller_of: CallerOf) -> MCPServer:
    """The MCP server over `core`; `caller_of` says who is calling (and so what they may read)."""
    # WARNING: the SDK sets up the root logger at this level; its INFO lines would fill the server log.
    server: MCPServer = _OneLineErrors(
        "pgcite", title="pgcite", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING"
    )

    def filters(caller: Caller, source: str | None, version: str | None, language: str | None) -> SearchFilter:
        core.require_source(source, caller.sources)
        return SearchFilter(
            source=source, version=version, language=language, exclude_flagged=True, allowed_sources=caller.sources
        )

    @server.tool(annotations=_READ_ONLY)
    @_reported
    def search_docs(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="What to look for, in words.")
        ],
        ctx: Context,
        source: SourceArg = None,
        version: VersionArg = None,
        language: LanguageArg = None,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many sections.")] = 5,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Find the documentation sections that best match a query (hybrid vector and full-text search),
        best first, each with its published URL and full text. Use ask_docs for an answer written from
        them with citations."""
        caller = caller_of(ctx)
        hits = core.search(
            query, k=k, filters=filters(caller, source, version, language), origin=Origin(CHANNEL, caller.name)
        )
        result = SearchResult(query=query, sections=[_section(h) for h in hits])
        text = "\n\n".join(f"{_listing([s], [i])}\n{s.text}" for i, s in enumerate(result.sections, 1))
        if not text:
            why = core.why_nothing(filters(caller, source, version, language))
            text = "No sections found." + (f" {why}." if why else "")
        return _result(text, result)

    @server.tool(annotations=_READ_ONLY)
    @_reported
    def ask_docs(
        question: Annotated[
            str,
            Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, as a person would ask it."),
        ],
        ctx: Context,
        source: SourceArg = None,
        version: VersionArg = None,
        language: LanguageArg = None,
    ) -> Annotated[CallToolResult, AskResult]:
        """Answer a question from the documentation only. Each claim ends with [n], a citation of
        the numbered sources (each with its URL), and every citation is checked against them. When
        the documents do not answer it, refused is true and the answer is exactly 'Not in the
        documents.', with the closest sections: do not fill the gap from elsewhere."""
        caller = caller_of(ctx)
        answer = core.ask(
            question, filters=filters(caller, source, version, language), origin=Origin(CHANNEL, caller.name)
        )
        sources = [CitedSection(number=p.number, **_section(p.hit).model_dump()) for p in answer.sources]
        closest = [_section(d.hit) for d in answer.dropped] if answer.refused else []
        result = AskResult(
            question=question,
            answer=answer.text,
            refused=answer.refused,
            citations=answer.citations,
            sources=sources,
            closest=closest,
            checks=answer.checks.as_json(),
            answer_id=answer.id,
        )
        if answer.refused:
            text = answer.text + ("\n\nClosest sections:\n" + _listing(closest) if closest else "")
        else:
            text = f"{answer.text}\n\nSources:\n{_listing(list(sources), [s.number for s in sources])}"
        return _result(text, result)

    @server.tool(annotations=_READ_ONLY)
    @_reported
    def read_page(
        ctx: Context,
        url: Annotated[str | None, Field(description="The page's published URL (an anchor is ignored).")] = None,
        source: Annotated[str | None, Field(description="With path: the page's source.")] = None,
        path: Annotated[
            str | None, Field(description="With source: the page's file, as search results give it.")
        ] = None,
    ) -> Annotated[CallToolResult, PageResult]:
        """Read a whole documentation page as clean Markdown, by its URL or by source and path."""
        page = core.page(url=url, source=source, path=path, allowed=caller_of(ctx).sources)
        result = PageResult(
            source=page.source,
            path=page.path,
            title=page.title,
            url=page.url,
            version=page.version,
            markdown=page.markdown or "",
        )
        return _result(result.markdown, result)

    @server.tool(annotations=_READ_ONLY)
    @_reported
    def read_section(
        id: Annotated[str, Field(description="A section id from search_docs or ask_docs.")],
        ctx: Context,
    ) -> Annotated[CallToolResult, SectionResult]:
        """Read the whole section a search result comes from (its heading's text, without subsections)."""
        section = core.section(id, allowed=caller_of(ctx).sources)
        result = SectionResult(
            id=section.id,
            source=section.source,
            path=section.path,
            title=section.title,
            heading_path=list(section.heading_path),
            url=section.url,
            version=section.version,
            markdown=section.markdown,
        )
        return _result(result.markdown, result)

    @server.tool(annotations=_READ_ONLY)
    @_reported
    def list_sources(ctx: Context) -> Annotated[CallToolResult, SourcesResult]:
        """The documentation sources that can be searched: name, site generator, URL, versions, size."""
        entries = [
            SourceEntry(
                name=s.name,
                site=s.site,
                base_url=s.base_url,
                default_version=s.default_version,
                versions=list(s.versions),
                default_language=s.default_language,
                languages=s.languages,
                pages=s.documents,
                sections=s.chunks,
            )
            for s in core.sources(caller_of(ctx).sources)
        ]
        text = "\n".join(
            f"{e.name}: {e.pages} pages ({e.site or 'plain'})"
            + (f" at {e.base_url}" if e.base_url else "")
            + (f", versions {', '.join(e.versions)} (default {e.default_version})" if len(e.versions) > 1 else "")
            + (f", languages {', '.join(e.languages)} (default {e.default_language})" if len(e.languages) > 1 else "")
            for e in entries
        )
        return _result(text or "No sources yet.", SourcesResult(sources=entries))

    return server
