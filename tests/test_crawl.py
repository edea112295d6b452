"""A published site by its URL (pgcite.ingest.crawl): Sphinx's own build of the test project
served by a real HTTP server on loopback that counts what it is asked, read as the same folder of
HTML reads; robots.txt, sitemaps, conditional requests on a re-sync, Retry-After, and the pages a
crawler must not store (a redirect loop, a 10 MB page, binary content, other places). Hostile
answers (`Site.routes`): a page or robots.txt that never ends, malformed links and redirects, a
100,000-URL sitemap, canonical links that claim another page, redirects to another loopback
server, declared charsets, a robots.txt that answers 5xx or runs to megabytes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.http_server import call, running
from tests.test_cli import pgcite
from tests.test_site_sphinx import build_html
from tests.test_sites import read_site
from tests.test_sync_server import SECRET, github, push_payload, wait_done

from pgcite.config import Settings, load_settings
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, SourceError
from pgcite.ingest.crawl import CrawlSettings, WebSource
from pgcite.ingest.fetch import Pace
from pgcite.ingest.flow import crawl_settings, open_location
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
    # path -> what answers it instead of the files (the handler is passed): hostile answers
    routes: dict[str, Callable[[BaseHTTPRequestHandler], None]] = field(default_factory=dict)


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
            if path in site.routes:
                return site.routes[path](self)
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


@contextmanager
def serving(site: Site) -> Iterator[Site]:
    """`site` served on a free loopback port (127.0.0.1 only), until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.url = f"http://127.0.0.1:{server.server_address[1]}/docs/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def served(sphinx_html: Path, tmp_path: Path) -> Iterator[Site]:
    root = tmp_path / "site"
    shutil.copytree(sphinx_html, root)
    with serving(Site(root)) as site:
        yield site


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Site]:
    """Another site on another loopback port: another host, as far as a URL says."""
    (tmp_path / "elsewhere").mkdir()
    with serving(Site(tmp_path / "elsewhere", robots="User-agent: *\nAllow: /\n")) as site:
        yield site


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
    with pytest.raises(
        SourceError, match=r"^http://127.0.0.1:\d+/robots.txt forbids pgcite to read http://127.0.0.1:\d+/docs/"
    ):
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
    pace = Pace(0.1)
    pace.slow_down()
    pace.slow_down()
    assert pace.interval == pytest.approx(0.4)
    for _ in range(20):
        pace.answered()
    assert pace.interval == pytest.approx(0.1)  # never faster than the floor
    pace.at_least(2.0)  # robots.txt's Crawl-delay
    pace.answered()
    assert pace.interval == pace.floor == 2.0


def test_a_canonical_url_is_honoured_only_when_the_page_it_names_agrees(served: Site) -> None:
    page = (
        '<html lang="en"><head><link rel="canonical" href="{}"></head>'
        "<body><main><h1>{}</h1><p>{}</p></main></body></html>"
    )
    docs = served.url
    # Names a real page that does not agree (no canonical of its own, other content): kept at its own
    # URL, and the real page keeps its URL and content (both orders: read after it, read before it).
    (served.root / "claims.html").write_text(page.format(f"{docs}guide/tuning.html", "Claims", "Claimed text."))
    (served.root / "early.html").write_text(page.format(f"{docs}guide/install.html", "Early", "Early text."))
    # Names a page that names itself: a copy of it, left out (that page read though no sitemap lists it).
    (served.root / "alias.html").write_text(page.format(f"{docs}named.html", "Alias", "Alias text."))
    (served.root / "named.html").write_text(page.format(f"{docs}named.html", "Named", "Named text."))
    (served.root / "old.html").write_text(page.format(docs.replace("/docs/", "/latest/") + "old.html", "Old", "Old."))
    (served.root / "mirror.html").write_text(page.format("https://docs.example.com/mirror.html", "Mirror", "Here."))
    listed = ["", "guide/tuning.html", "claims.html", "early.html", "guide/install.html", "alias.html"]
    served.sitemap = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{docs}{path}</loc></url>" for path in [*listed, "old.html", "mirror.html"])
        + "</urlset>"
    )
    _, _, items = crawl(served.url, delay=0.0, concurrency=1)
    texts = {i.path: i.text for i in items if isinstance(i, Document)}
    assert "Claimed text." in texts["claims.html"] and "Early text." in texts["early.html"]
    assert "turns per second" in texts["guide/tuning.html"] and "Claimed" not in texts["guide/tuning.html"]
    assert "Early" not in texts["guide/install.html"]
    assert "alias.html" not in texts and "Named text." in texts["named.html"]
    assert "mirror.html" in texts  # production's address on another host: read here
    assert "old.html" not in texts  # published elsewhere on this host
    assert [i.path for i in items].count("index.html") == 1 and not [i for i in items if isinstance(i, Skipped)]
    # A re-sync: the named page answers 304, and the decision made when it was read stands.
    known = {i.path: i.stamp for i in items if isinstance(i, Document)}
    _, _, again = crawl(served.url, known, delay=0.0, concurrency=1)
    assert {i.path for i in again} == set(known) and all(isinstance(i, Unchanged) for i in again)


def test_the_server_syncs_a_crawled_site_when_asked_pushed_and_scheduled(
    served: Site, settings: Settings, embedder
) -> None:
    settings = dataclasses.replace(settings, webhook_secret=SECRET)
    tuning = served.root / "guide" / "tuning.html"
    with Pgcite(settings, embedder=embedder) as app, running(app) as base:
        app.ingest(served.url, source="web")
        key = app.create_key("crawl-admin", admin=True)
        for n, (trigger, start) in enumerate(
            [
                ("api", lambda: call(base, "/v1/sources/web/sync", b"", key=key).body["job"]["id"]),
                ("github", lambda: github(base, "web", push_payload()).body["job"]["id"]),
            ]
        ):
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


# --- hostile answers -----------------------------------------------------------------------------

Route = Callable[[BaseHTTPRequestHandler], None]


def answer(status: int, body: bytes = b"", kind: str = "text/html", **headers: str) -> Route:
    return lambda handler: handler.send(status, body, kind, **headers)  # type: ignore[attr-defined]


def dripping(head: bytes, every: float, *, in_headers: bool = False, most: int = 100) -> Route:
    """An answer that never ends: its head, then a byte every `every` seconds (well within any read
    timeout), in its headers or in its body, `most` bytes at most (a bounded loop), until the
    client hangs up."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        try:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
            if not in_headers:
                handler.wfile.write(b"Content-Length: 1000000\r\n\r\n" + head)
            for _ in range(most):
                handler.wfile.flush()
                time.sleep(every)
                handler.wfile.write(b"x" if in_headers else b" ")  # in the headers: a name that never ends
        except OSError:
            pass  # the client hung up

    return route


def link_from_index(site: Site, *paths: str) -> None:
    index = site.root / "index.html"
    links = " ".join(f'<a href="{path}">{path}</a>' for path in paths)
    index.write_text(index.read_text().replace("</body>", links + "</body>"))


def urlset(urls: list[str]) -> bytes:
    locs = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'.encode()


def test_a_page_or_robots_txt_that_never_ends_is_abandoned_at_its_deadline(served: Site) -> None:
    served.routes["/docs/drip.html"] = dripping(b'<html lang="en"><body><main><h1>Drip</h1><p>', 0.2)
    link_from_index(served, "drip.html")
    started = time.monotonic()
    _, _, items = crawl(served.url, delay=0.0, page_deadline=1.0)
    assert time.monotonic() - started < 8  # the read timeout (30 s) never tripped
    by_path = {item.path: item for item in items}
    assert isinstance(by_path["drip.html"], Skipped)
    assert by_path["drip.html"].reason.startswith("did not finish within 1 s (a server sending it slowly")
    assert sum(isinstance(i, Document) for i in items) == 4  # the other pages all read
    # robots.txt whose headers never end: the crawl stops, in one line, before any page
    served.routes["/robots.txt"] = dripping(b"", 0.2, in_headers=True)
    served.seen.clear()
    started = time.monotonic()
    with pytest.raises(
        SourceError, match=r"^cannot read http://127.0.0.1:\d+/robots.txt: did not finish within 1 s .*try later$"
    ):
        crawl(served.url, page_deadline=1.0)
    assert time.monotonic() - started < 5 and list(served.seen) == ["/robots.txt"]


@pytest.mark.slow
def test_a_hostile_site_crawled_with_a_deadline_ends_by_it_with_each_good_page_stored_and_each_bad_one_named(
    served: Site, database_url: str, tmp_path: Path, embedder
) -> None:
    """The battery's shape, by `pgcite ingest URL --deadline 5 --page-deadline 2`: a page that drips,
    a page with a malformed link and a 100,000-URL sitemap on one site. It never ended and stored
    nothing (a byte every 29 s held a request, the sitemap was deduplicated in a list, pages were
    written when the scan ended, a malformed link raised). Now it ends within a minute past its
    deadline, every good page stored, each bad or unread one named in one line; the deadlines are
    kept for the source's syncs, where a known page that drips now keeps its stored version."""
    _, folder = read_site(served.root)
    good = sorted(folder)  # the pages the site publishes, as a folder of HTML reads them
    served.routes["/docs/drip.html"] = dripping(b'<html lang="en"><body><main><h1>Drip</h1><p>', 0.2)
    (served.root / "extra.html").write_text(
        '<html lang="en"><body><main><h1>Extra</h1><p>The flux capacitor needs 88 miles per hour.</p>'
        '<a href="http://[bad">bad</a></main></body></html>'
    )
    listed = [served.url + path for path in [*good, "extra.html", "drip.html"]]
    listed += [f"{served.url}pages/{n}.html" for n in range(100_000 - len(listed))]  # answered 404: gone
    served.routes["/docs/sitemap.xml"] = answer(200, urlset(listed), "application/xml")
    env = dict(os.environ, PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    started = time.monotonic()
    done = pgcite("ingest", served.url, "--source", "web", "--deadline", "5", "--page-deadline", "2", "--json",
                  env=env, timeout=300)
    assert time.monotonic() - started < 5 + 60 and done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert sorted(report["paths"]["new"]) == sorted([*good, "extra.html"])
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons.pop("drip.html").startswith("did not finish within 2 s (a server sending it slowly")
    assert reasons.pop("http://[bad").startswith("a malformed link on http://127.0.0.1:")
    # The rest: pages of the sitemap the crawl did not reach by its deadline, each named.
    assert all(path.startswith("pages/") and reason.startswith("not read: the crawl reached its deadline (5 s) first")
               for path, reason in reasons.items())
    # On stderr, one line per reason: the unread pages on one, three of them named.
    lines = [line for line in done.stderr.splitlines() if line.startswith("skipped ")]
    assert len(lines) == 3 and "Traceback" not in done.stderr, lines
    unread = next(line for line in lines if "the crawl reached its deadline" in line)
    assert re.match(rf"skipped pages/\d+\.html, pages/\d+\.html, pages/\d+\.html and {len(reasons) - 3:,} more: "
                    "not read: the crawl reached its deadline", unread), unread
    # A sync reads with the same deadlines: a page known before that drips now is named, its stored text kept.
    served.routes["/docs/guide/tuning.html"] = served.routes.pop("/docs/drip.html")
    with Pgcite(Settings(home=tmp_path / "home", database_url=database_url), embedder=embedder) as app:
        started = time.monotonic()
        again = app.sync("web")
        assert time.monotonic() - started < 5 + 60
        skipped = {s.path: s.reason for s in again.skipped}
        assert skipped["guide/tuning.html"].startswith("did not finish within 2 s")
        assert again.removed == 0 and again.unchanged == len(good)  # the others and extra.html: 304s
        hits = app.search("default spin rate turns per second", k=3, filters=SearchFilter(source="web"))
        assert any("40 turns per second" in h.content for h in hits)


def test_the_deadlines_are_settings_a_source_may_override() -> None:
    settings = load_settings(Path("no-such.toml"), {"PGCITE_CRAWL_DEADLINE": "600", "PGCITE_CRAWL_PAGE_DEADLINE": "9"})
    source = open_location("https://docs.example/guide/", settings)
    assert isinstance(source, WebSource) and (source.crawl.deadline, source.crawl.page_deadline) == (600, 9)
    assert crawl_settings(settings, deadline=30).deadline == 30 and crawl_settings(settings).deadline == 600
    for wrong in (0.0, -5.0, float("nan"), float("inf")):
        with pytest.raises(PgciteError, match=r"^a crawl's page-deadline is a number of seconds over 0 \(got "):
            crawl_settings(settings, page_deadline=wrong)
    with pytest.raises(PgciteError, match=r"fix --deadline or the setting crawl_deadline \(PGCITE_CRAWL_DEADLINE\)$"):
        crawl_settings(dataclasses.replace(settings, crawl_deadline=0.0))


def test_a_malformed_link_or_redirect_is_skipped_and_the_crawl_goes_on(served: Site) -> None:
    (served.root / "extra.html").write_text(
        '<html lang="en"><body><main><h1>Extra</h1><p>Links.</p><a href="http://[bad">bad</a> '
        '<a href="http://[bad">again</a> <a href="moved.html">moved</a></main></body></html>'
    )
    served.routes["/docs/moved.html"] = answer(302, Location="http://[bad/")
    link_from_index(served, "extra.html")
    _, _, items = crawl(served.url, delay=0.0)
    skipped = {i.path: i.reason for i in items if isinstance(i, Skipped)}
    assert set(skipped) == {"http://[bad", "moved.html"}  # the link said once
    assert skipped["http://[bad"].startswith("a malformed link on http://127.0.0.1:")
    assert "extra.html (Invalid IPv6 URL): not followed; fix it on the site" in skipped["http://[bad"]
    assert skipped["moved.html"].startswith("redirects to a malformed address 'http://[bad/' (Invalid IPv6 URL)")
    assert sum(isinstance(i, Document) for i in items) == 5  # the four pages and extra.html
    # In a sitemap: left out, the pages it lists read.
    served.sitemap = urlset(["http://[bad", served.url, f"{served.url}guide/faq.html"]).decode()
    _, _, items = crawl(served.url, delay=0.0)
    assert sorted(i.path for i in items) == ["guide/faq.html", "index.html"]


def test_a_100000_url_sitemap_is_read_in_linear_time_up_to_the_page_limit(served: Site) -> None:
    for n in (1, 2):  # a sitemap's legal maximum, twice, behind a sitemap index
        urls = [f"{served.url}pages/{n}-{i}.html" for i in range(50_000)]
        served.routes[f"/docs/sitemap-{n}.xml"] = answer(200, urlset(urls), "application/xml")
    served.routes["/docs/sitemap.xml"] = answer(
        200,
        (
            '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<sitemap><loc>{served.url}sitemap-1.xml</loc></sitemap>"
            f"<sitemap><loc>{served.url}sitemap-2.xml</loc></sitemap></sitemapindex>"
        ).encode(),
        "application/xml",
    )
    source = open_location(served.url, Settings())
    scan = source.scan({})
    started = time.monotonic()
    first = next(scan)  # the sitemaps are read before the start page is given
    assert time.monotonic() - started < 15 and first.path == "index.html"
    scan.close()
    assert served.seen["/docs/sitemap-1.xml"] == 1 and served.seen["/docs/sitemap-2.xml"] == 0  # the limit reached


def test_robots_txt_and_sitemaps_never_follow_a_redirect_to_another_host(served: Site, elsewhere: Site) -> None:
    other = elsewhere.url.removesuffix("docs/")
    served.routes["/robots.txt"] = answer(302, Location=f"{other}robots.txt")
    served.routes["/docs/sitemap.xml"] = answer(301, Location=f"{other}sitemap.xml")
    served.routes["/sitemap.xml"] = answer(307, Location=f"{other}docs/sitemap.xml")
    _, _, items = crawl(served.url, delay=0.0)
    assert not elsewhere.seen  # nothing asked of the other host
    assert sum(isinstance(i, Document) for i in items) == 4  # robots.txt unavailable, pages found by links


def test_a_page_is_read_in_the_charset_it_declares(served: Site) -> None:
    latin = '<html lang="en"><body><main><h1>Café</h1><p>Crème brûlée, à la carte.</p></main></body></html>'
    served.routes["/docs/latin.html"] = answer(200, latin.encode("iso-8859-1"), "text/html; charset=iso-8859-1")
    (served.root / "meta.html").write_bytes(
        '<html lang="en"><head><meta charset="windows-1252"><title>Q</title></head><body><main><h1>Quotes</h1>'
        "<p>\u201cSmart\u201d quotes \u2013 and a dash.</p></main></body></html>".encode("cp1252")
    )
    # A charset no browser knows, or a codec that is no charset: read as UTF-8.
    odd = (
        '<html lang="en"><head><meta charset="utf-7"></head>'
        "<body><main><h1>Naïve</h1><p>+ADw-b+AD4-</p></main></body></html>"
    )
    served.routes["/docs/odd.html"] = answer(200, odd.encode(), "text/html; charset=rot13")
    link_from_index(served, "latin.html", "meta.html", "odd.html")
    _, _, items = crawl(served.url, delay=0.0)
    texts = {i.path: i.text for i in items if isinstance(i, Document)}
    assert "Crème brûlée, à la carte." in texts["latin.html"]
    assert "\u201cSmart\u201d quotes \u2013 and a dash." in texts["meta.html"]
    assert "Naïve" in texts["odd.html"] and "+ADw-b+AD4-" in texts["odd.html"]
    assert not [i for i in items if isinstance(i, Skipped)]


@pytest.mark.parametrize("status", [500, 503])
def test_robots_txt_that_cannot_be_read_stops_the_crawl(served: Site, status: int) -> None:
    served.routes["/robots.txt"] = answer(status, b"down", "text/plain", Retry_After="0")
    with pytest.raises(
        SourceError, match=rf"^cannot read http://127.0.0.1:\d+/robots.txt: HTTP {status}; .*try later$"
    ):
        crawl(served.url)
    assert list(served.seen) == ["/robots.txt"]  # no page asked: RFC 9309's complete disallow


def test_robots_txt_is_read_up_to_500_kib(served: Site) -> None:
    padding = ("# " + "x" * 97 + "\n") * 20_000  # 2 MB of comments
    served.robots = f"User-agent: *\nDisallow: /docs/guide/faq.html\n{padding}Disallow: /docs/guide/tuning.html\n"
    _, _, items = crawl(served.url, delay=0.0)
    paths = {i.path for i in items}
    assert "guide/tuning.html" in paths  # its rule lies past 500 KiB: not read
    assert "guide/faq.html" not in paths and "/docs/guide/faq.html" not in served.seen
