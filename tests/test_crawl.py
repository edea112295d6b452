"""A published site by its URL (pgcite.ingest.crawl): Sphinx's own build of the test project
served by a real HTTP server on loopback that counts what it is asked, read as the same folder of
HTML reads; robots.txt, sitemaps, conditional requests on a re-sync, Retry-After, and the pages a
crawler must not store (a redirect loop, a 10 MB page, binary content, other places)."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.http_server import call, running
from tests.test_site_sphinx import build_html
from tests.test_sites import read_site
from tests.test_sync_server import SECRET, github, push_payload, wait_done

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import SourceError
from pgcite.ingest.crawl import CrawlSettings, WebSource, _Pace
from pgcite.ingest.flow import open_location
from pgcite.ingest.sites import detect
from pgcite.ingest.sources import Document, Skipped, Unchanged
from pgcite.vocabulary import SearchFilter


@dataclass
class Site:
    """What the server serves under /docs/ (files of `root`), its robots.txt, and what it saw."""

    root: Path
    robots: str = "User-agent: *\nDisallow: /docs/_sources/\n"
    sitemap: str | None = None
    seen: Counter[str] = field(default_factory=Counter)
    conditional: Counter[str] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)
    busy: set[str] = field(default_factory=set)  # paths answered 429 once already
    url: str = ""


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def send(self, status: int, body: bytes = b"", kind: str = "text/html", **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?")[0]
            site.seen[path] += 1
            site.times.append(time.monotonic())
            if self.headers.get("If-None-Match"):
                site.conditional[path] += 1
            if path == "/robots.txt":
                return self.send(200, site.robots.encode(), "text/plain")
            if path == "/docs/sitemap.xml" and site.sitemap is not None:
                return self.send(200, site.sitemap.encode(), "application/xml")
            if path == "/docs/loop.html":
                return self.send(302, Location="/docs/loop.html")
            if path == "/docs/busy.html" and path not in site.busy:
                site.busy.add(path)
                return self.send(429, Retry_After="1")
            if path == "/docs/big.html":
                return self.send(200, b"<html><body><p>" + b"x" * 10_000_000 + b"</p></body></html>")
            if path == "/docs/picture.html":
                return self.send(200, b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")
            file = site.root / path.removeprefix("/docs/").lstrip("/")
            if file.is_dir():
                file = file / "index.html"
            if not path.startswith("/docs/") or not file.is_file():
                return self.send(404, b"not found")
            body = file.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == etag:
                return self.send(304, ETag=etag)
            kind = "text/html" if file.suffix == ".html" else "application/octet-stream"
            self.send(200, body, kind, ETag=etag)

    return Handler


@pytest.fixture(scope="module")
def sphinx_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_html(tmp_path_factory.mktemp("crawl") / "html")


@pytest.fixture
def served(sphinx_html: Path, tmp_path: Path) -> Iterator[Site]:
    root = tmp_path / "site"
    shutil.copytree(sphinx_html, root)
    site = Site(root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.url = f"http://127.0.0.1:{server.server_address[1]}/docs/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site
    server.shutdown()
    server.server_close()


def crawl(url: str, known: dict[str, str] | None = None, **settings: float):
    source = open_location(url, Settings())
    if settings:
        assert isinstance(source, WebSource)
        source.crawl = CrawlSettings(**settings)  # type: ignore[arg-type]
    site = detect(source)
    source.exclude = (*source.exclude, *site.exclude)
    return source, site, list(source.scan(known or {}))


def test_a_crawled_site_reads_as_its_folder_of_html(served: Site) -> None:
    source, site, items = crawl(served.url)
    assert site.name == "html" and site.base_url == served.url
    pages = {item.path: site.render(item) for item in items if isinstance(item, Document)}
    _, folder = read_site(served.root)
    assert {p.route for p in pages.values()} == {p.route for p in folder.values()}
    for path, page in pages.items():
        assert [s.anchor for s in page.parsed.sections] == [s.anchor for s in folder[path].parsed.sections]
    # Each page asked for once; robots.txt once; nothing robots.txt forbids, nothing not a page.
    assert served.seen["/robots.txt"] == 1
    assert served.seen["/docs/"] + served.seen["/docs/index.html"] == 1  # one page, however linked
    assert all(count == 1 for path, count in served.seen.items() if path.endswith(".html")), served.seen
    assert not [p for p in served.seen if p.startswith("/docs/_sources/") or p.endswith((".css", ".js"))]
    assert "search.html" not in pages and "genindex.html" not in pages  # the generator's own pages


def test_a_re_sync_of_an_unchanged_site_sends_only_conditional_requests(
    served: Site, settings: Settings, embedder
) -> None:
    with Pgcite(settings, embedder=embedder) as app:
        first = app.ingest(served.url, source="web")
        assert first.new == 4 and first.site == "html" and not first.skipped
        pages = {p for p, n in served.seen.items() if p.endswith(".html") and n}
        served.seen.clear()
        again = app.sync("web")
    assert again.unchanged == 4 and again.new == again.changed == again.removed == 0
    assert {p for p in served.seen if p.endswith(".html")} == pages
    assert all(served.conditional[p] == served.seen[p] for p in pages)  # every page asked If-None-Match


def test_robots_txt_forbidding_everything_is_a_clear_error(served: Site) -> None:
    served.robots = "User-agent: *\nDisallow: /\n"
    with pytest.raises(SourceError, match=r"^http://127.0.0.1:\d+/robots.txt forbids pgcite to read http://127.0.0.1:\d+/docs/"):
        crawl(served.url)
    assert [p for p in served.seen if p != "/robots.txt"] == []


def test_an_unreachable_site_or_a_start_that_is_not_html_is_one_line(served: Site) -> None:
    with pytest.raises(SourceError, match=r"^cannot reach http://127.0.0.1:9/robots.txt .*check the address"):
        crawl("http://127.0.0.1:9/docs/")
    with pytest.raises(SourceError, match=r"cannot read .*picture.html: not an HTML page \(image/png\)"):
        crawl(served.url + "picture.html")


def test_a_start_page_drawn_by_scripts_is_a_clear_error(served: Site) -> None:
    (served.root / "app.html").write_text(
        '<!doctype html><html lang="en"><head><title>Docs</title><script src="/app.js"></script></head>'
        '<body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>'
    )
    with pytest.raises(SourceError, match=r"app.html: the page as served holds no text .* ingest its sources"):
        crawl(served.url + "app.html")


def test_pages_a_crawler_must_not_store_are_left_out_or_said(served: Site) -> None:
    (served.root / "extra.html").write_text(
        '<html lang="en"><body><main><h1>Extra</h1><p>More.</p>'
        '<a href="loop.html">loop</a> <a href="big.html">big</a> <a href="picture.html">picture</a> '
        '<a href="busy.html">busy</a> <a href="javascript:alert(1)">js</a> <a href="mailto:x@y.z">mail</a> '
        '<a href="https://elsewhere.example/docs/">away</a> <a href="../private/x.html">up</a> '
        '<a href="fr.html">fr</a> <a href="style.css">css</a></main></body></html>'
    )
    (served.root / "busy.html").write_text(
        '<html lang="en"><body><main><h1>Busy</h1><p>Later.</p></main></body></html>'
    )
    (served.root / "fr.html").write_text('<html lang="fr"><body><main><h1>Français</h1></main></body></html>')
    index = served.root / "index.html"
    index.write_text(index.read_text().replace("</body>", '<a href="extra.html">extra</a></body>'))
    _, _, items = crawl(served.url, delay=0.0)
    by_path = {item.path: item for item in items}
    assert "redirects more than 5 times" in by_path["loop.html"].reason  # type: ignore[union-attr]
    assert "over the 5 MB limit" in by_path["big.html"].reason  # type: ignore[union-attr]
    assert "picture.html" not in by_path and "fr.html" not in by_path  # not HTML; another language
    assert isinstance(by_path["busy.html"], Document) and served.seen["/docs/busy.html"] == 2  # waited out
    assert not any(isinstance(i, Skipped) for p, i in by_path.items() if p not in ("loop.html", "big.html"))
    assert "/private/x.html" not in served.seen and "/docs/style.css" not in served.seen


def test_a_sitemap_lists_the_pages_and_only_this_sites(served: Site) -> None:
    served.sitemap = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{served.url}</loc></url><url><loc>{served.url}guide/tuning.html</loc></url>"
        "<url><loc>https://elsewhere.example/docs/x.html</loc></url></urlset>"
    )
    _, _, items = crawl(served.url)
    assert sorted(i.path for i in items) == ["guide/tuning.html", "index.html"]  # links not followed
    assert not [p for p in served.seen if "install" in p]


def test_a_page_met_again_sends_its_stamp_and_a_304_costs_nothing(served: Site) -> None:
    source, _, items = crawl(served.url)
    known = {i.path: i.stamp for i in items if isinstance(i, Document)}
    assert all(stamp.startswith('etag "') for stamp in known.values())
    _, _, again = crawl(served.url, known)
    assert {i.path for i in again} == set(known) and all(isinstance(i, Unchanged) for i in again)


def test_max_pages_bounds_a_crawl(served: Site) -> None:
    _, _, items = crawl(served.url, max_pages=2)
    assert len(items) == 2


def test_a_site_that_says_too_many_is_asked_half_as_often_until_it_answers_again() -> None:
    pace = _Pace(0.1)
    pace.slow_down()
    pace.slow_down()
    assert pace.interval == pytest.approx(0.4)
    for _ in range(20):
        pace.answered()
    assert pace.interval == pytest.approx(0.1)  # never faster than the floor
    pace.at_least(2.0)  # robots.txt's Crawl-delay
    pace.answered()
    assert pace.interval == pace.floor == 2.0


def test_a_canonical_url_decides_where_a_page_is_stored_on_this_host_only(served: Site) -> None:
    page = '<html lang="en"><head><link rel="canonical" href="{}"></head><body><main><h1>{}</h1></main></body></html>'
    (served.root / "copy.html").write_text(page.format(f"{served.url}index.html", "Copy"))
    (served.root / "old.html").write_text(page.format(served.url.replace("/docs/", "/latest/") + "old.html", "Old"))
    (served.root / "mirror.html").write_text(page.format("https://docs.example.com/mirror.html", "Mirror"))
    index = served.root / "index.html"
    links = '<a href="copy.html">c</a> <a href="old.html">o</a> <a href="mirror.html">m</a>'
    index.write_text(index.read_text().replace("</body>", links + "</body>"))
    _, _, items = crawl(served.url, delay=0.0)
    paths = [i.path for i in items]
    assert "mirror.html" in paths  # production's address on another host: read here
    assert "old.html" not in paths and "copy.html" not in paths  # elsewhere on the site; the index itself
    assert paths.count("index.html") == 1


def test_the_server_syncs_a_crawled_site_when_asked_pushed_and_scheduled(
    served: Site, settings: Settings, embedder
) -> None:
    settings = dataclasses.replace(settings, webhook_secret=SECRET)
    tuning = served.root / "guide" / "tuning.html"
    with Pgcite(settings, embedder=embedder) as app, running(app) as base:
        app.ingest(served.url, source="web")
        key = app.create_key("crawl-admin", admin=True)
        for n, (trigger, start) in enumerate([
            ("api", lambda: call(base, "/v1/sources/web/sync", b"", key=key).body["job"]["id"]),
            ("github", lambda: github(base, "web", push_payload()).body["job"]["id"]),
        ]):
            tuning.write_text(tuning.read_text().replace(f"{40 + n} turns per second", f"{41 + n} turns per second"))
            served.seen.clear()
            served.conditional.clear()
            job = wait_done(base, key, start())
            assert job["state"] == "done" and "1 changed, 3 unchanged" in job["summary"], job
            assert app.source("web").last_sync["trigger"] == trigger
            pages = {p for p in served.seen if p.endswith((".html", "/"))}  # the start page is /docs/
            assert len(pages) == 4 and all(served.conditional[p] == served.seen[p] for p in pages)
        tuning.write_text(tuning.read_text().replace("42 turns per second", "43 turns per second"))
        app.schedule("web", 2)
        deadline = time.monotonic() + 30
        while (app.source("web").last_sync or {}).get("trigger") != "schedule":
            assert time.monotonic() < deadline, "the scheduled sync did not come"
            time.sleep(0.2)
        app.schedule("web", None)
        assert app.source("web").last_sync["paths"]["changed"] == ["guide/tuning.html"]
        hits = app.search("default spin rate turns per second", k=3, filters=SearchFilter(source="web"))
        assert any("43 turns per second" in h.content for h in hits)
