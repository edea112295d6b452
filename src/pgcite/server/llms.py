"""llms.txt on `pgcite serve` (llmstxt.org): `/llms.txt` lists the sources a caller may read,
`/SOURCE/llms.txt` a source's pages, `/SOURCE/llms-full.txt` their text (capped), and
`/SOURCE/PATH.md` one page's Markdown copy. The default version only; keys and scopes as on /v1/*."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from pgcite.access import Caller
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.publish import llms_txt
from pgcite.publish.llms_txt import Site

TEXT = "text/plain; charset=utf-8"
MARKDOWN = "text/markdown; charset=utf-8"


def add_llms_routes(app: FastAPI, core: Pgcite, read_access: Callable[..., Caller]) -> None:
    """Added last: `/{source}/...` must not shadow a route of the API's own."""

    def site(name: str, caller: Caller) -> Site:
        info = core.source(name, caller.sources)
        return Site(info.name, info.base_url, core.pages(info.name))

    def root(request: Request) -> str:
        return str(request.base_url)

    @app.get("/llms.txt", include_in_schema=False)
    def index(request: Request, caller: Caller = Depends(read_access)) -> PlainTextResponse:
        sites = [site(s.name, caller) for s in core.sources(caller.sources)]
        text = llms_txt.root_index("pgcite", sites, lambda s: f"{root(request)}{s.name}/")
        return PlainTextResponse(text, media_type=TEXT)

    @app.get("/{source}/llms.txt", include_in_schema=False)
    def source_index(source: str, request: Request, caller: Caller = Depends(read_access)) -> PlainTextResponse:
        found = site(source, caller)
        href = f"{root(request)}{found.name}/"
        text = llms_txt.site_index(found, lambda page: href + llms_txt.copy_name(page, found.base_url))
        return PlainTextResponse(text, media_type=TEXT)

    @app.get("/{source}/llms-full.txt", include_in_schema=False)
    def source_full(source: str, caller: Caller = Depends(read_access)) -> StreamingResponse:
        found = site(source, caller)
        pieces = llms_txt.FullText(
            found.name, llms_txt.summary(found), core.page_texts(found.name), core.settings.llms_full_max_bytes
        )
        return StreamingResponse((p.encode() for p in pieces), media_type=TEXT)

    @app.get("/{source}/{path:path}.md", include_in_schema=False)
    def page_copy(source: str, path: str, caller: Caller = Depends(read_access)) -> PlainTextResponse:
        found = site(source, caller)
        wanted = f"{path}.md"
        page = next((p for p in found.pages if llms_txt.copy_name(p, found.base_url) == wanted), None)
        if page is None:
            raise PgciteError(f"no page {wanted!r} in {found.name!r}; its llms.txt lists them", kind="not_found")
        return PlainTextResponse(llms_txt.page_copy(core.page(source=found.name, path=page.path)), media_type=MARKDOWN)
