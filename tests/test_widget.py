"""The Ask-AI widget in Debian's Chromium (Playwright): a docs-like page served from a second origin
on loopback loads `/widget.js` from a real `pgcite serve` with a browser key made for it, and a
reader asks, follows up, opens citations and rates; a page on a third origin gets no answer.
Screenshots are kept under build/test-artifacts/widget/ to be looked at."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import threading
from collections.abc import Callable, Iterator

import pytest

from pgcite.core import Pgcite
from tests.browser import browser  # noqa: F401 - the fixture
from tests.browser import shot
from tests.http_server import call, running, served, warm_app
from tests.test_web import GUIDE, HOSTILE, MARKUP, ROTATE

pytestmark = pytest.mark.slow

# Markup in a heading and in the sentence an answer quotes: the widget must show it as characters.
LEVER = {"lever.md": "# Stopping `<img src=x onerror=\"window.__pwned=1\">` widgets\n\n"
                     "## The `<script>window.__pwned=2</script>` lever\n\n"
                     "To stop a spinning widget, pull the lever labelled `<img src=x onerror=\"window.__pwned=3\">`.\n"}
STOP = "How do I stop a spinning widget?"

core, base = served({"guide": (GUIDE, "https://docs.example.com/"),
                     "notes": ({**HOSTILE, **LEVER}, "https://notes.example.com/")})

# A docs site's page: its own search on Ctrl/⌘+K, as most have, and the widget's one tag.
HOST_PAGE = """<!doctype html>
<html lang="en" data-theme="{theme}"><head><meta charset="utf-8"><title>Example docs</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{ font-family: serif; margin: 0; }} header {{ padding: 12px; border-bottom: 1px solid #ccc; }}
main {{ padding: 24px; max-width: 720px; }} [data-theme=dark] body {{ background: #111; color: #ddd; }}
button {{ all: unset; }}</style></head>
<body><header><input id="search" placeholder="Search the docs (Ctrl+K)"></header>
<main><h1>Example docs</h1><p>Keys let a client read from the server.</p><button id="before">Read more</button></main>
<script>
document.addEventListener("keydown", (e) => {{
  if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") {{
    e.preventDefault(); window.searchOpened = (window.searchOpened || 0) + 1; document.getElementById("search").focus();
  }}
}});
</script>
<script src="{server}/widget.js" {attributes} async></script>
</body></html>"""


@contextlib.contextmanager
def docs_site(render: Callable[[], str]) -> Iterator[str]:
    """A static site on a loopback port of its own (another origin than pgcite's): `/` is the page
    `render()` gives at the time it is asked for."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = render().encode()
            self.send_response(200 if self.path in ("/", "/index.html") else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def site(core: Pgcite, base: str):
    """The docs site's origin, its browser key, and what its page is made of (`attributes`, `theme`)."""
    parts = {"theme": "light"}
    with docs_site(lambda: HOST_PAGE.format(server=base, **parts)) as origin:
        key = core.create_key("docs-site", sources=["guide", "notes"], origins=[origin])
        parts["attributes"] = f'data-key="{key}" data-title="Ask the docs"'
        yield origin, key, parts
        core.revoke_key("docs-site")


@contextlib.contextmanager
def opened(browser, url: str, **options) -> Iterator:
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 860}, **options})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + "/")
    page.locator("pgcite-ask .launcher").wait_for()
    try:
        yield page
    finally:
        context.close()
    assert errors == []


def ask(page, question: str, turn: int):
    """Type into the widget, press Enter, and wait for the turn's answer to finish."""
    page.fill("pgcite-ask textarea#pgcite-question", question)
    page.press("pgcite-ask textarea#pgcite-question", "Enter")
    answer = page.locator("pgcite-ask .turn").nth(turn).locator(".answer")
    page.wait_for_function(
        "n => { const a = document.querySelector('pgcite-ask').shadowRoot.querySelectorAll('.turn .answer')[n];"
        " return a && !a.hasAttribute('aria-busy'); }", arg=turn)
    return answer


def test_a_reader_asks_follows_up_opens_a_citation_and_rates(browser, site, core: Pgcite):
    origin, _, _ = site
    with opened(browser, origin) as page:
        page.keyboard.press("Control+i")
        dialog = page.locator("pgcite-ask [role=dialog]")
        assert dialog.is_visible() and dialog.get_attribute("aria-modal") == "true"
        with page.expect_response(lambda r: r.url.endswith("/v1/ask")) as streamed:
            first = ask(page, ROTATE, 0)
        assert streamed.value.headers["content-type"].startswith("text/event-stream")
        assert "create the new key first" in first.inner_text()
        cite = first.locator("a.cite").first
        href = cite.get_attribute("href")
        assert href == "https://docs.example.com/api-keys.md#rotating-an-api-key"
        assert cite.get_attribute("target") is None  # the docs' own page, in the same tab
        assert first.locator(".sources a").first.get_attribute("href").startswith("https://docs.example.com/")
        shot(page, "widget", "answered")
        second = ask(page, "and staging keys?", 1)  # a follow-up: asked together with the question before
        assert "vault" in second.inner_text()
        # Feedback, with a comment, reaches the answer log.
        second.get_by_role("button", name="Not helpful").click()
        second.locator(".feedback textarea").fill("Say where the vault login is.")
        second.get_by_role("button", name="Send").click()
        second.get_by_text("Thanks").wait_for()
    core.answer_log.flush()
    logged = [e for e in core.log_entries(limit=10) if e.channel == "widget"]
    assert {e.question for e in logged} == {ROTATE, f"{ROTATE} and staging keys?"}
    rated = [e for e in logged if e.rating == "down"]
    assert len(rated) == 1 and rated[0].comment == "Say where the vault login is."


def test_hostile_section_text_is_shown_as_text(browser, site):
    origin, _, _ = site
    with opened(browser, origin) as page:
        page.locator("pgcite-ask .launcher").click()
        answer = ask(page, STOP, 0)
        assert 'pull the lever labelled <img src=x onerror="window.__pwned=3">' in answer.inner_text()
        assert "<script>window.__pwned=2</script>" in answer.locator(".sources").inner_text()
        ask(page, MARKUP, 1)
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.querySelector('pgcite-ask').shadowRoot.querySelectorAll('script, img').length") == 0


def test_a_page_on_another_origin_gets_no_answer(browser, site, base: str):
    _, key, holder = site
    with docs_site(lambda: HOST_PAGE.format(server=base, attributes=holder["attributes"], theme="light")) as stranger:
        with opened(browser, stranger) as page:
            page.locator("pgcite-ask .launcher").click()
            answer = ask(page, ROTATE, 0)
            assert answer.locator("[role=alert]").is_visible()
            assert "rotate" not in answer.inner_text().lower()
        # What the browser hid, the server refused: no CORS grant, and the key is not valid there.
        preflight = call(base, "/v1/ask", method="OPTIONS",
                         headers={"Origin": stranger, "Access-Control-Request-Method": "POST"})
        assert preflight.status == 403 and "Access-Control-Allow-Origin" not in preflight.headers
        direct = call(base, "/v1/ask", {"question": ROTATE}, key=key, headers={"Origin": stranger})
        assert direct.status == 403 and "not valid on" in direct.body["error"]["message"]


def test_other_keys_are_refused_from_a_page(site, base: str, core: Pgcite):
    origin, _, _ = site
    reader = core.create_key("server-side", sources=["guide"])
    try:
        refused = call(base, "/v1/ask", {"question": ROTATE}, key=reader, headers={"Origin": origin})
        assert refused.status == 403 and "may not be used from a web page" in refused.body["error"]["message"]
        assert call(base, "/v1/ask", {"question": ROTATE}, key=reader).status == 200  # from a server, as before
        # The server's own page behind a proxy that rewrites Host is not a stranger.
        proxied = {"Origin": "https://docs-answers.example", "X-Forwarded-Host": "docs-answers.example"}
        assert call(base, "/v1/ask", {"question": ROTATE}, key=reader, headers=proxied).status == 200
        own = {"Origin": "https://docs-answers.example", "Sec-Fetch-Site": "same-origin"}
        assert call(base, "/v1/ask", {"question": ROTATE}, key=reader, headers=own).status == 200
    finally:
        core.revoke_key("server-side")


# Every route a key opens, read and write, as (method, path, body).
KEYED_ROUTES = [
    ("GET", "/v1/sources", None), ("GET", "/v1/search?q=rotate", None), ("POST", "/v1/ask", {"question": ROTATE}),
    ("GET", "/v1/models", None),
    ("POST", "/v1/chat/completions", {"model": "pgcite", "messages": [{"role": "user", "content": ROTATE}]}),
    ("GET", "/llms.txt", None), ("GET", "/guide/llms.txt", None), ("GET", "/guide/llms-full.txt", None),
    ("GET", "/v1/answers/00000000-0000-0000-0000-000000000000", None),
    ("GET", "/v1/log", None), ("GET", "/v1/gaps", None), ("POST", "/v1/sources/guide/sync", b""),
    ("GET", "/v1/jobs/00000000-0000-0000-0000-000000000000", None), ("DELETE", "/v1/sources/nothing-here", None),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]


def test_a_browser_key_is_for_pages_and_other_keys_are_not(site, base: str, core: Pgcite):
    """The rule of docs/widget.md on every route: a browser key works only sent from its pages (plain
    curl sends no Origin); an admin or reader key sent from a page is refused, writes included."""
    origin, browser_key, _ = site
    admin = core.create_key("ops", admin=True)
    try:
        mcp = {"Accept": "application/json, text/event-stream"}
        for method, path, body in KEYED_ROUTES:
            extra = mcp if path == "/mcp" else {}
            alone = call(base, path, body, key=browser_key, method=method, headers=extra)
            assert alone.status == 403, (path, alone.status)
            why = alone.body["error"]["message"]
            assert "is a browser key: only the web pages it was made for" in why or "may only read" in why, path
            paged = call(base, path, body, key=admin, method=method, headers={"Origin": origin, **extra})
            assert paged.status == 403, (path, paged.status)
            assert "may not be used from a web page" in paged.body["error"]["message"], path
        # Where each belongs, they still work.
        assert call(base, "/v1/search?q=rotate", key=browser_key, headers={"Origin": origin}).status == 200
        assert call(base, "/v1/log", key=admin).status == 200
        assert call(base, "/v1/sources/guide/sync", b"", key=browser_key, method="POST",
                    headers={"Origin": origin}).status == 403  # and a browser key never writes
    finally:
        core.revoke_key("ops")


def test_the_shortcut_leaves_ctrl_k_to_the_site_and_focus_returns(browser, site):
    origin, _, _ = site
    with opened(browser, origin) as page:
        page.focus("#before")
        page.keyboard.press("Control+k")
        assert page.evaluate("window.searchOpened") == 1
        assert not page.locator("pgcite-ask [role=dialog]").is_visible()
        page.focus("#before")
        page.keyboard.press("Control+i")
        assert page.locator("pgcite-ask [role=dialog]").is_visible()
        active = "document.querySelector('pgcite-ask').shadowRoot.activeElement?.id || ''"
        assert page.evaluate(active) == "pgcite-question"
        for _ in range(6):  # Tab goes round inside the dialog, never back to the page
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.tagName") == "PGCITE-ASK"
        page.keyboard.press("Escape")
        assert not page.locator("pgcite-ask [role=dialog]").is_visible()
        assert page.evaluate("document.activeElement.id") == "before"
        labels = page.evaluate("[...document.querySelector('pgcite-ask').shadowRoot.querySelectorAll('button')]"
                               ".map(b => b.getAttribute('aria-label') || b.textContent)")
        assert "Ask the docs about these docs (Ctrl+I)" in labels and "Close" in labels


def test_a_phone_wide_page_in_dark_mode(browser, site):
    origin, _, holder = site
    holder["theme"] = "dark"
    try:
        with opened(browser, origin, viewport={"width": 375, "height": 740}) as page:
            page.locator("pgcite-ask .launcher").click()
            answer = ask(page, ROTATE, 0)
            box = page.locator("pgcite-ask [role=dialog]").bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 375 and box["width"] >= 360
            assert page.evaluate("document.querySelector('pgcite-ask').hasAttribute('data-dark')")
            assert answer.locator("a.cite").count() >= 1
            shot(page, "widget", "phone-dark", full_page=False)
    finally:
        holder["theme"] = "light"


def test_a_browser_key_is_rate_limited_per_visitor_address(admin_dsn: str, embedder, tmp_path):
    """Every visitor of the docs site shares the key: each address gets the limit of its own."""
    docs = {"spin.md": "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"}
    with warm_app(admin_dsn, embedder, tmp_path, {"widgets": (docs, "")}, serve_rate_limit=3) as app, \
            running(app) as url:
        origin = "https://docs.example.com"
        key = app.create_key("site", origins=[origin])
        port = int(url.rsplit(":", 1)[1])

        def search(address: str) -> int:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(address, 0))
            connection.request("GET", "/v1/search?q=spin+rate", headers={"Authorization": f"Bearer {key}",
                                                                         "Origin": origin})
            status = connection.getresponse().status
            connection.close()
            return status

        assert [search("127.0.0.1") for _ in range(4)] == [200, 200, 200, 429]
        assert search("127.0.0.2") == 200  # another visitor, with the same key
