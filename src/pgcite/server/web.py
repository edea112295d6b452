"""The web pages: `GET /` (ask) and `GET /insights` (the answer log's charts; its figures come from
/v1/insights with an admin key) with their static files, and the Ask-AI widget's script at
`/widget.js`; all read from the package folder `pgcite/server/static/`. The charts are drawn by
Chart.js, vendored there with its licence (`make vendor-charts`).

The pages are plain HTML, CSS and scripts (shared.js, then their own) with no build step and
nothing fetched from elsewhere, so they work offline. They talk to the same server's /v1 API. Only
the files named in `_FILES` are served; any other name is a 404 in the API's JSON error shape.
Every response carries a strict Content-Security-Policy (scripts, styles and requests to this
origin only), so even text that slipped past a page's own escaping could not run a script."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import Response
from starlette.exceptions import HTTPException

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

# name -> media type; nothing else under /static is served.
_FILES = {
    "shared.js": "text/javascript; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "insights.js": "text/javascript; charset=utf-8",
    "insights.css": "text/css; charset=utf-8",
    "chart.umd.min.js": "text/javascript; charset=utf-8",
    "chart.js-LICENSE.txt": "text/plain; charset=utf-8",
}


def _headers(cache: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": cache,
    }


def _read(name: str) -> bytes:
    return resources.files("pgcite").joinpath("server", "static", name).read_bytes()


def read_static(name: str) -> str:
    """A static file's text (the insights report inlines them: publish/insights_report.py)."""
    return _read(name).decode()


def _page(name: str) -> Response:
    # Revalidated on every load, so an upgraded server's page is seen at once.
    return Response(_read(name), media_type="text/html; charset=utf-8", headers=_headers("no-cache"))


def add_web_routes(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    def page() -> Response:
        return _page("index.html")

    @app.get("/insights", include_in_schema=False)
    def insights() -> Response:
        return _page("insights.html")

    @app.get("/widget.js", include_in_schema=False)
    def widget() -> Response:
        # Loaded by other sites' pages (docs/widget.md): no CSP of ours applies there, and a site
        # that isolates itself (COEP) may still load it.
        headers = {"Cache-Control": "public, max-age=300", "Cross-Origin-Resource-Policy": "cross-origin"}
        return Response(_read("widget.js"), media_type="text/javascript; charset=utf-8", headers=headers)

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _FILES:
            raise HTTPException(404, f"no static file {name!r}")
        return Response(_read(name), media_type=_FILES[name], headers=_headers("public, max-age=300"))
