"""A published site by its URL as a source: `pgcite ingest https://docs.example.com/guide/`.

Which pages: the site's sitemaps (those robots.txt names, else /sitemap.xml; sitemap indexes
followed), else the links found from the start page; either way only HTML pages under the start
URL's path, on its host, that robots.txt lets `pgcite` read and `--exclude` does not name, in the
start page's language. A page whose canonical URL is another page's is read once, under that URL
(one on another host is a mirror's production address, and ignored).

How: a few requests at once (`concurrency`), at least `delay` seconds apart (robots.txt's
Crawl-delay when longer), a 429 or 503 waited out as Retry-After says and the pace halved (a tenth
regained with each answer); each page at most `max_file_bytes`, at most 5 redirects, all within
the start URL. Each page's stamp is its ETag or Last-Modified, so a scan given the stamps sends
conditional requests: a 304 is `Unchanged`.

A page's path is its URL relative to the start URL (`install.html`, `guide/index.html` for
`guide/`), which the html site routes back to the URL it came from."""

from __future__ import annotations

import re
import threading
import time
import urllib.robotparser
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit
from xml.etree import ElementTree

import httpx2

from pgcite.errors import SourceError
from pgcite.ingest.page_facts import holds_text, page_facts
from pgcite.ingest.sources import Document, Reader, Skipped, Unchanged, is_excluded, one_line, to_record, too_big

__all__ = ["USER_AGENT", "CrawlSettings", "WebSource", "is_url"]

USER_AGENT = "pgcite/0.1 (+https://pgcite.dev/crawler)"
ROBOTS_AGENT = "pgcite"
MAX_REDIRECTS = 5
MAX_RETRIES = 3
MAX_WAIT = 60.0  # a Retry-After longer than this is an outage: the page is skipped
MAX_SITEMAP_BYTES = 20_000_000
_REDIRECTS = (301, 302, 303, 307, 308)
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


@dataclass(frozen=True)
class CrawlSettings:
    concurrency: int = 4
    delay: float = 0.1  # seconds between two requests' starts, at least
    max_pages: int = 5000
    timeout: float = 30.0


class _Pace:
    """Request starts spaced at least `floor` seconds apart, across threads; a site that says
    "too many" is asked half as often, and each answer it gives brings the pace back a tenth."""

    def __init__(self, floor: float) -> None:
        self.floor = self.interval = floor
        self._next, self._lock = 0.0, threading.Lock()

    def at_least(self, seconds: float) -> None:
        with self._lock:
            self.floor = self.interval = max(self.floor, seconds)

    def slow_down(self) -> None:
        with self._lock:
            self.interval = min(max(self.interval * 2, 0.05), 10.0)  # at least one request every 10 s

    def answered(self) -> None:
        with self._lock:
            self.interval = max(self.floor, self.interval * 0.9)

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        time.sleep(max(0.0, start - now))


class WebSource(Reader):
    def __init__(self, location: str, *, crawl: CrawlSettings = CrawlSettings(), **options: Any) -> None:
        super().__init__(location, **options)
        parts = urlsplit(location)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SourceError(f"not a web address: {location}: give one as https://docs.example.com/")
        path = parts.path or "/"
        # The start URL's folder is the site's root: /docs/intro.html starts from /docs/.
        self.root = f"{parts.scheme}://{parts.netloc}{path if path.endswith('/') else path.rsplit('/', 1)[0] + '/'}"
        self.start = f"{parts.scheme}://{parts.netloc}{path}"
        self.crawl = crawl
        self.client = httpx2.Client(timeout=crawl.timeout, follow_redirects=False, headers={"User-Agent": USER_AGENT})
        self.robots = urllib.robotparser.RobotFileParser()
        self._pace = _Pace(crawl.delay)
        self.language = ""

    # --- the Source protocol -------------------------------------------------------------

    def exists(self, path: str) -> bool:
        return False  # a site's files are what it serves: no configuration to find

    def read(self, path: str) -> bytes:
        response = self._get(urljoin(self.root, path))
        if response.status_code != 200:
            raise FileNotFoundError(f"{path}: HTTP {response.status_code}")
        return response.content

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        self.others = 0
        self._read_robots()
        if not self.robots.can_fetch(ROBOTS_AGENT, self.start):
            raise SourceError(
                f"{self._robots_url()} forbids pgcite to read {self.start}: "
                "ask the site's owners, or ingest its sources"
            )
        start_path = self.path_of(self.start)
        first = self._fetch(self.start, known.get(start_path))
        if isinstance(first, Skipped) or first is None:
            reason = first.reason if first else "it is not a page of this site (gone, or sent elsewhere)"
            raise SourceError(one_line(f"cannot read {self.start}: {reason}"))
        if isinstance(first, Document) and not holds_text(first.text):
            raise SourceError(
                f"cannot read {self.start}: the page as served holds no text (a site drawn by scripts in the "
                "browser sends none); pgcite reads pages as the server sends them: ingest its sources or a static build"
            )
        # One language is read: the start page's (an unchanged start page's stamp keeps it).
        self.language = (
            page_facts(first.text, self.start).language
            if isinstance(first, Document)
            else _language_of(known[start_path])
        ).split("-")[0]
        listed = self._sitemap_urls()
        # The pages read last time too: an unchanged page (a 304) shows no links, and its links are
        # the ones it had then; a page gone answers 404 and is removed.
        again = [self.url_of(path) for path in sorted(known)]
        queue, seen = [], {start_path}  # seen: paths, as /docs/ and /docs/index.html are one page
        for url in [*listed, *(url for url in again if self.in_scope(url))]:
            if self.path_of(url) not in seen:
                seen.add(self.path_of(url))
                queue.append(url)
        done: set[str] = set()  # page paths yielded, a canonical URL's included
        follow = not listed  # without a sitemap, pages are found by their links

        def accept(item: Document | Skipped | Unchanged | None, url: str) -> Iterator[Document | Skipped | Unchanged]:
            if item is None or item.path in done:
                return
            if isinstance(item, Document):
                facts = page_facts(item.text, url)
                links, language = facts.links, facts.language
                if self.language and language and language.split("-")[0] != self.language:
                    self.others += 1  # another language's page
                    return
                for link in links if follow else ():
                    if self.path_of(link) not in seen and self.in_scope(link):
                        seen.add(self.path_of(link))
                        queue.append(link)
                item = Document(item.path, item.text, item.checksum, f"{item.stamp}\t{self.language}")
            done.add(item.path)
            yield item

        yield from accept(first, self.start)
        with ThreadPoolExecutor(max_workers=max(1, self.crawl.concurrency)) as pool:
            running: dict[Future[Any], str] = {}
            while queue or running:
                while (
                    queue and len(running) < self.crawl.concurrency and len(done) + len(running) < self.crawl.max_pages
                ):
                    url = queue.pop(0)
                    running[pool.submit(self._fetch, url, known.get(self.path_of(url)))] = url
                if not running:
                    break  # max_pages reached
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    url = running.pop(future)
                    yield from accept(future.result(), url)

    # --- which URLs ------------------------------------------------------------------------

    def path_of(self, url: str) -> str:
        path = urlsplit(url).path[len(urlsplit(self.root).path) :]
        return path + "index.html" if not path or path.endswith("/") else path

    def url_of(self, path: str) -> str:
        return self.root + (
            path[: -len("index.html")] if path == "index.html" or path.endswith("/index.html") else path
        )

    def in_scope(self, url: str) -> bool:
        """Under the start URL, allowed by robots.txt, not excluded, not a file that is not a page."""
        if not url.startswith(self.root) or "?" in url:
            return False
        path = self.path_of(url)
        if re.search(r"\.(?!html?$)[A-Za-z0-9]{1,5}$", path.rsplit("/", 1)[-1]):
            return False  # style sheets, images, archives: not pages
        return self.robots.can_fetch(ROBOTS_AGENT, url) and not is_excluded(path, self.exclude)

    def _robots_url(self) -> str:
        parts = urlsplit(self.root)
        return f"{parts.scheme}://{parts.netloc}/robots.txt"

    def _read_robots(self) -> None:
        response = self._get(self._robots_url())  # unreachable: SourceError
        if response.status_code in (401, 403):  # as Google reads them: the site is closed
            self.robots.parse(["User-agent: *", "Disallow: /"])
        else:  # none (404): everything allowed
            self.robots.parse(response.text.splitlines() if response.status_code == 200 else [])
        delay = self.robots.crawl_delay(ROBOTS_AGENT)
        if delay:
            self._pace.at_least(min(float(delay), MAX_WAIT))

    def _sitemap_urls(self) -> list[str]:
        parts = urlsplit(self.root)
        pending = list(self.robots.site_maps() or []) or [
            f"{self.root}sitemap.xml",
            f"{parts.scheme}://{parts.netloc}/sitemap.xml",
        ]
        found: list[str] = []
        visited: set[str] = set()
        while pending and len(visited) < 50:
            sitemap = pending.pop(0)
            if sitemap in visited or urlsplit(sitemap).netloc != parts.netloc:
                continue  # a sitemap on another host is not this site's
            visited.add(sitemap)
            try:
                response = self._get(sitemap)
            except SourceError:
                continue
            if (
                response.status_code != 200
                or len(response.content) > MAX_SITEMAP_BYTES
                or b"<!ENTITY" in response.content
            ):
                continue  # entities are refused: a sitemap has no use for them
            try:
                tree = ElementTree.fromstring(response.content)
            except ElementTree.ParseError:
                continue
            for loc in tree.iter(f"{_SITEMAP_NS}loc"):
                url = urldefrag((loc.text or "").strip())[0]
                if tree.tag == f"{_SITEMAP_NS}sitemapindex":
                    pending.append(url)
                elif self.in_scope(url) and url not in found:
                    found.append(url)
        return found

    # --- fetching --------------------------------------------------------------------------

    def _get(self, url: str, headers: Mapping[str, str] | None = None) -> httpx2.Response:
        """One GET, paced, with 429 and 503 waited out; redirects are the caller's."""
        for attempt in range(MAX_RETRIES + 1):
            self._pace.wait()
            try:
                response = self.client.get(url, headers=dict(headers or {}), follow_redirects=True)
            except httpx2.HTTPError as err:
                raise SourceError(
                    one_line(
                        f"cannot reach {url} ({type(err).__name__}: {err}): check the address and that the site is up"
                    )
                ) from None
            if response.status_code not in (429, 503) or attempt == MAX_RETRIES:
                return response
            wait_for = _retry_after(response.headers.get("Retry-After"))
            if wait_for > MAX_WAIT:
                return response
            self._pace.slow_down()
            time.sleep(wait_for)
        raise AssertionError("unreachable")

    def _fetch(self, url: str, stamp: str | None) -> Document | Skipped | Unchanged | None:
        """The page at `url` as a record under its path; None for what is not a page of this site
        (another type, another place, a page gone)."""
        path = self.path_of(url)
        headers = _conditional(stamp)
        hops = retries = 0
        while hops <= MAX_REDIRECTS:
            try:
                with self._streamed(url, headers) as (response, body):
                    wait_for = _retry_after(response.headers.get("Retry-After"))
                    if response.status_code in (429, 503) and retries < MAX_RETRIES and wait_for <= MAX_WAIT:
                        retries += 1
                        self._pace.slow_down()
                        time.sleep(wait_for)  # as the site asks
                        continue
                    self._pace.answered()
                    if response.status_code not in _REDIRECTS:
                        return self._record(path, url, response, body, stamp)
                    target = urldefrag(urljoin(url, response.headers.get("Location", "")))[0]
            except SourceError as err:
                return Skipped(path, str(err))
            if not self.in_scope(target):
                self.others += 1
                return None
            url, hops = target, hops + 1
        return Skipped(path, f"redirects more than {MAX_REDIRECTS} times: fix the redirect loop on the site")

    @contextmanager
    def _streamed(self, url: str, headers: Mapping[str, str]) -> Iterator[tuple[httpx2.Response, bytes | None]]:
        """A paced GET, and its body when it is a 200 of at most max_file_bytes (None otherwise):
        a page too big is never read whole."""
        self._pace.wait()
        limit = self.limits.max_file_bytes
        try:
            with self.client.stream("GET", url, headers=dict(headers)) as response:
                chunks: list[bytes] = []
                size = 0
                if response.status_code == 200:
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > limit:
                            break
                        chunks.append(chunk)
                body = b"".join(chunks) if response.status_code == 200 and size <= limit else None
                yield response, body
        except httpx2.HTTPError as err:
            raise SourceError(one_line(f"cannot read it ({type(err).__name__}: {err})")) from None

    def _record(
        self, path: str, url: str, response: httpx2.Response, raw: bytes | None, stamp: str | None
    ) -> Document | Skipped | Unchanged | None:
        if response.status_code == 304 and stamp:
            return Unchanged(path)
        if response.status_code in (404, 410):
            return None  # gone: the page stored before is removed
        if response.status_code != 200:
            return Skipped(path, f"HTTP {response.status_code} from {url}: the page stored before, if any, is kept")
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind not in ("text/html", "application/xhtml+xml"):
            self.others += 1
            return Skipped(path, f"not an HTML page ({kind or 'no content type'})") if url == self.start else None
        if raw is None:
            return Skipped(
                path,
                too_big(
                    int(response.headers.get("Content-Length") or 0) or self.limits.max_file_bytes + 1, self.limits
                ),
            )
        record = to_record(path, raw, self.limits, _stamp_of(response.headers))
        if isinstance(record, Document):
            canonical = page_facts(record.text, url).canonical
            # on another host it names the production copy of a mirror or a staging build: ignored
            if canonical and canonical != url and urlsplit(canonical).netloc == urlsplit(url).netloc:
                if not self.in_scope(canonical):
                    return None  # published elsewhere: that copy is the one to read
                record = Document(self.path_of(canonical), record.text, record.checksum, record.stamp)
        return record


def _language_of(stamp: str) -> str:
    """A page's stamp is its validator, a tab, and the language the crawl read ("etag "x"\ten")."""
    return stamp.rpartition("\t")[2] if "\t" in stamp else ""


def _conditional(stamp: str | None) -> dict[str, str]:
    if not stamp:
        return {}
    kind, _, value = stamp.split("\t", 1)[0].partition(" ")
    return {"If-None-Match": value} if kind == "etag" else {"If-Modified-Since": value} if kind == "modified" else {}


def _stamp_of(headers: Mapping[str, str]) -> str:
    if headers.get("ETag"):
        return f"etag {headers['ETag']}"
    if headers.get("Last-Modified"):
        return f"modified {headers['Last-Modified']}"
    return ""


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 1.0
    except ValueError:
        return 1.0  # an HTTP date: wait the least
