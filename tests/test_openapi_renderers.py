"""The anchors of an API description's sections are the ones its renderer links: Swagger UI's and
Redoc's own bundles (pinned, fetched by `make dev` into build/renderers) render the description in
chromium, and every section pgcite anchors is a link Swagger UI writes or an element Redoc
scrolls to. The description mixes what changes an anchor: tags with spaces, signs and accents,
several tags, none, no operationId, an operationId with a space, a path with braces and a tilde."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
import yaml

from pgcite.ingest.sites.openapi import spec_markdown
from pgcite.ingest.markdown import PLAIN, parse_body
from tests.browser import browser  # noqa: F401 - the fixture

RENDERERS = Path(__file__).resolve().parents[1] / "build" / "renderers"
SPEC = """
openapi: 3.0.3
info: {title: Probe, version: "1"}
tags: [{name: books}, {name: "Book Reviews & Ratings"}]
paths:
  /books:
    post: {tags: [books], operationId: createBook, summary: Create a book, responses: {"201": {description: ok}}}
  /books/{bookId}/reviews:
    get:
      tags: ["Book Reviews & Ratings"]
      summary: List reviews
      parameters: [{name: bookId, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /health:
    get: {summary: Health, responses: {"200": {description: ok}}}
  /ping:
    get: {operationId: ping, responses: {"200": {description: ok}}}
  /odd:
    get: {tags: [books], operationId: "get odd", responses: {"200": {description: ok}}}
  /cafe:
    get: {tags: ["Café v1.2", second], operationId: cafe, responses: {"200": {description: ok}}}
  /users/{id}~x:
    delete: {tags: [user admin], responses: {"204": {description: ok}}}
"""
PAGES = {
    "swagger-ui": """<!doctype html><html><head><meta charset="utf-8"></head><body><div id="ui"></div>
<script src="{dir}/swagger-ui/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({{spec: {spec}, dom_id: "#ui", deepLinking: true}})</script></body></html>""",
    "redoc": """<!doctype html><html><head><meta charset="utf-8"></head><body><div id="r"></div>
<script src="{dir}/redoc/bundles/redoc.standalone.js"></script>
<script>Redoc.init({spec}, {{}}, document.getElementById("r"))</script></body></html>""",
}


def anchors(renderer: str) -> set[str]:
    _, body = spec_markdown(SPEC, "openapi.yaml", renderer)
    return {s.anchor for s in parse_body(body, {}, "Probe", PLAIN).sections if s.anchor}


@pytest.mark.parametrize("renderer", ["swagger-ui", "redoc"])
def test_every_anchor_is_one_the_renderer_links(renderer: str, browser, tmp_path: Path) -> None:  # noqa: F811
    if not (RENDERERS / "redoc").is_dir():
        pytest.skip(f"no renderers in {RENDERERS}: `make dev` fetches them")
    page_file = tmp_path / "index.html"
    spec = json.dumps(yaml.safe_load(SPEC))
    page_file.write_text(PAGES[renderer].format(dir=RENDERERS.as_uri(), spec=spec))
    page = browser.new_page()
    page.goto(page_file.as_uri())
    page.wait_for_selector("[id^='operations-tag-'], [id^='tag/']", timeout=20_000)
    if renderer == "swagger-ui":  # its deep links, as each operation's and tag's link writes them
        linked = set(page.eval_on_selector_all("a[href^='#/']", "els => els.map(e => e.getAttribute('href'))"))
        found = {f"#{a}" for a in anchors(renderer)}
    else:  # the elements Redoc scrolls to for a fragment (it decodes the fragment first)
        linked = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
        found = {urllib.parse.unquote(a) for a in anchors(renderer)}
    page.close()
    # 7 operations; 5 tags' sections, "default" among them, in Swagger UI and 4 in Redoc, which has no group for
    # operations without tags.
    assert len(found) == (12 if renderer == "swagger-ui" else 11)
    assert found <= linked, sorted(found - linked)


def test_a_description_that_uses_redocs_extensions_is_anchored_as_redoc_links_it() -> None:
    spec = SPEC.replace("info: {", "info: {x-logo: {url: logo.png}, ")
    _, body = spec_markdown(spec, "openapi.yaml")
    assert "{#tag/books/operation/createBook}" in body
    assert "{#/books/createBook}" in spec_markdown(SPEC, "openapi.yaml")[1]  # Swagger UI by default
