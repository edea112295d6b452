"""A published site by its URL as a source: `pgcite ingest https://docs.example.com/guide/`.

Which pages: the site's sitemaps (those robots.txt names, else /sitemap.xml; sitemap indexes
followed), else the links found from the start page; either way only HTML pages under the start
URL's path, on its host, that robots.txt lets `pgcite` read and `--exclude` does not name, in the
start page's language. A page whose canonical URL is another page of the site is left out as a
copy of it when that page agrees, else kept at its own URL (canonical.py); a canonical URL on
another host is a mirror's production address, and ignored.

How: a few requests at once (`concurrency`), at least `delay` seconds apart (robots.txt's
Crawl-delay when longer), a 429 or 503 waited out as Retry-After says and the pace halved (a tenth
regained with each answer); each page at most `max_file_bytes`, at most 5 redirects, all within
the start URL (robots.txt's and sitemaps' within its host); each answer within `page_deadline`
and the crawl within `deadline` (fetch.py), a page not read by then named with the reason. A page
is decoded by its declared charset (page_facts.py). robots.txt is read up to 500 KiB; one that
cannot be read (a 5xx, a 429, no answer in time) stops the crawl, as RFC 9309 asks. Each page's
stamp is its ETag or Last-Modified, so a scan given the stamps sends conditional requests: a 304
is `Unchanged`.

A page's path is its URL relative to the start URL (`install.html`, `guide/index.html` for
`guide/`), which the html site routes back to the URL it came from."""

from __future__ import annotations

import re
import urllib.robotparser
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any
from urllib.parse import urljoin, urlsplit
from xml.etree import ElementTree

from pgcite.errors import SourceError
from pgcite.ingest.canonical import Canonicals
from pgcite.ingest.fetch import (
    REDIRECTS,
    USER_AGENT,
    Answer,
    CrawlSettings,
    Fetcher,
    OutOfTime,
    Unreachable,
    conditional,
    stamp_of,
)
from pgcite.ingest.page_facts import absolute, as_utf8, holds_text, page_facts
from pgcite.ingest.sources import Document, Reader, Skipped, Unchanged, is_excluded, one_line, to_record, too_big

__all__ = ["USER_AGENT", "CrawlSettings", "WebSource", "is_url"]

ROBOTS_AGENT = "pgcite"
MAX_ROBOTS_BYTES = 500 * 1024  # RFC 9309: parse at least 500 KiB; what is past it is not read
MAX_SITEMAP_BYTES = 20_000_000
MAX_WAIT = 60.0  # the longest Crawl-delay kept
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


class WebSource(Reader):
    def __init__(self, location: str, *, crawl: CrawlSettings | None = None, **options: Any) -> None:
        super().__init__(location, **options)
        parts = urlsplit(location)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SourceError(f"not a web address: {location}: give one as https://docs.example.com/")
        path = parts.path or "/"
        # The start URL's folder is the site's root: /docs/intro.html starts from /docs/.
        self.root = f"{parts.scheme}://{parts.netloc}{path if path.endswith('/') else path.rsplit('/', 1)[0] + '/'}"
        self.start = f"{parts.scheme}://{parts.netloc}{path}"
        self.crawl = crawl or CrawlSettings()
        self.robots = urllib.robotparser.RobotFileParser()
        self.language = ""

    @property
    def crawl(self) -> CrawlSettings:
        return self._crawl

    @crawl.setter
    def crawl(self, settings: CrawlSettings) -> None:
        self._crawl = settings
        self.fetcher = Fetcher(settings, self.limits.max_file_bytes)

    # --- the Source protocol -------------------------------------------------------------

    def exists(self, path: str) -> bool:
        return False  # a site's files are what it serves: no configuration to find

    def read(self, path: str) -> bytes:
        try:
            answer = self.fetcher.get(urljoin(self.root, path), lambda url: url.startswith(self.root))
        except SourceError as err:
            raise OSError(one_line(f"{path}: {err}")) from None
        if answer.status != 200:
            raise FileNotFoundError(f"{path}: HTTP {answer.status}")
        if answer.body is None:
            raise OSError(too_big(self.limits.max_file_bytes + 1, self.limits))
        return answer.body

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        self.others = 0
        self.fetcher.start_crawl()
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
        if isinstance(first, Document):
            if not holds_text(first.text):
                raise SourceError(
                    f"cannot read {self.start}: the page as served holds no text (a site drawn by scripts in the "
                    "browser sends none); pgcite reads pages as the server sends them: ingest its sources or a "
                    "static build"
                )
            facts = page_facts(first.text, self.start)
            if self._canonical(facts.canonical, self.start) is None:
                raise SourceError(
                    one_line(
                        f"cannot read {self.start}: its canonical URL is {facts.canonical}, outside {self.root}: "
                        "start from the folder of that copy"
                    )
                )
        # One language is read: the start page's (an unchanged start page's stamp keeps it).
        language = facts.language if isinstance(first, Document) else _language_of(known[start_path])
        self.language = language.split("-")[0]
        listed = self._sitemap_urls()
        # The pages read last time too: an unchanged page (a 304) shows no links, and its links are
        # the ones it had then; a page gone answers 404 and is removed.
        again = [self.url_of(path) for path in sorted(known)]
        queue: deque[str] = deque()
        seen = {start_path}  # paths, as /docs/ and /docs/index.html are one page

        def enqueue(url: str) -> None:
            if self.path_of(url) not in seen and self.in_scope(url):
                seen.add(self.path_of(url))
                queue.append(url)

        for url in [*listed, *again]:
            enqueue(url)
        done: set[str] = set()  # page paths yielded
        follow = not listed  # without a sitemap, pages are found by their links
        copies = Canonicals(known)
        malformed: set[str] = set()  # links that are no address, each said once

        def settle(path: str) -> Iterator[Document]:
            for page, copy in copies.settle(path):
                if copy or page.path in done:
                    self.others += copy
                    continue
                done.add(page.path)
                yield page

        def accept(item: Document | Skipped | Unchanged | None, url: str) -> Iterator[Document | Skipped | Unchanged]:
            path = self.path_of(url)
            if item is not None and item.path in done:
                return
            if isinstance(item, Document):
                facts = page_facts(item.text, url)
                for href, why in facts.malformed:
                    if href not in malformed:
                        malformed.add(href)
                        yield Skipped(
                            one_line(href)[:200] or "(an empty link)",
                            one_line(f"a malformed link on {url} ({why}): not followed; fix it on the site"),
                        )
                target = self._canonical(facts.canonical, url)
                if self.language and facts.language and facts.language.split("-")[0] != self.language:
                    item = None  # another language's page
                elif target is None:
                    item = None  # published elsewhere on the site: that copy is the one to read
                else:
                    for link in facts.links if follow else ():
                        enqueue(link)
                    item = Document(item.path, item.text, item.checksum, f"{item.stamp}\t{self.language}")
                    if target not in ("", path) and copies.undecided(item, target):
                        enqueue(facts.canonical)  # read it, to know whether it agrees
                        return
                    if target not in ("", path) and copies.is_copy(item, target):
                        item = None
                self.others += item is None
                copies.taken(path, item, names_itself=target == path)
            else:
                copies.taken(path, unchanged=isinstance(item, Unchanged))
            if item is not None:
                done.add(item.path)
                yield item
            yield from settle(path)

        yield from accept(first, self.start)
        with ThreadPoolExecutor(max_workers=max(1, self.crawl.concurrency)) as pool:
            running: dict[Future[Any], str] = {}
            while queue or running:
                while (
                    queue and len(running) < self.crawl.concurrency and len(done) + len(running) < self.crawl.max_pages
                ):
                    url = queue.popleft()
                    running[pool.submit(self._fetch, url, known.get(self.path_of(url)))] = url
                if not running:
                    break  # max_pages reached
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    url = running.pop(future)
                    yield from accept(future.result(), url)
        for path in copies.never_read():  # named pages never read (the page limit, the deadline)
            yield from settle(path)

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

    def on_host(self, url: str) -> bool:
        """On the start URL's host (scheme and port too): where robots.txt and sitemaps are read."""
        parts, root = urlsplit(url), urlsplit(self.root)
        return (parts.scheme, parts.netloc) == (root.scheme, root.netloc)

    def _canonical(self, canonical: str, url: str) -> str | None:
        """The path of the page `canonical` names, when it is this page or another of the site; ""
        when there is none, or it is on another host (the production address of a mirror, a
        staging build or a build served locally); None when it is elsewhere on this host."""
        if not canonical or urlsplit(canonical).netloc != urlsplit(url).netloc:
            return ""
        if canonical.startswith(self.root) and self.path_of(canonical) == self.path_of(url):
            return self.path_of(url)  # the page names itself
        return self.path_of(canonical) if self.in_scope(canonical) else None

    def _robots_url(self) -> str:
        parts = urlsplit(self.root)
        return f"{parts.scheme}://{parts.netloc}/robots.txt"

    def _read_robots(self) -> None:
        """robots.txt as RFC 9309 reads it: a 4xx means no rules (401 and 403 close the site, as
        Google reads them), a 5xx or 429 or no answer means all is disallowed, and the crawl stops."""
        url = self._robots_url()
        later = "pgcite reads no page of a site whose robots.txt cannot be read (RFC 9309): try later"
        try:
            answer: Answer | None = self.fetcher.get(url, self.on_host, limit=MAX_ROBOTS_BYTES, cut=True)
        except Unreachable as err:
            raise SourceError(
                one_line(f"cannot reach {url} ({err}): check the address and that the site is up")
            ) from None
        except OutOfTime as err:
            raise SourceError(one_line(f"cannot read {url}: {err}; {later}")) from None
        except SourceError:
            answer = None  # a redirect loop or a malformed one: no robots.txt to read (RFC 9309)
        status = answer.status if answer else 404
        if status == 429 or status >= 500:
            raise SourceError(f"cannot read {url}: HTTP {status}; {later}")
        if status in (401, 403):  # as Google reads them: the site is closed
            self.robots.parse(["User-agent: *", "Disallow: /"])
        elif status == 200 and answer and answer.body is not None:
            text = answer.body.decode("utf-8", "replace")
            # past 500 KiB: the rules read so far, less the line cut in two
            self.robots.parse((text.rsplit("\n", 1)[0] if answer.cut else text).splitlines())
        else:  # none (404), or a redirect off this host or past 5 (RFC 9309: unavailable): all allowed
            self.robots.parse([])
        delay = self.robots.crawl_delay(ROBOTS_AGENT)
        if delay:
            self.fetcher.pace.at_least(min(float(delay), MAX_WAIT))

    def _sitemap_urls(self) -> list[str]:
        """The pages the site's sitemaps list, in order, each once, at most `max_pages`."""
        parts = urlsplit(self.root)
        pending = deque(self.robots.site_maps() or []) or deque(
            [f"{self.root}sitemap.xml", f"{parts.scheme}://{parts.netloc}/sitemap.xml"]
        )
        found: dict[str, None] = {}  # a dict keeps the order, and checks a URL in constant time
        visited: set[str] = set()
        while pending and len(visited) < 50 and len(found) < self.crawl.max_pages:
            sitemap = pending.popleft()
            if sitemap in visited or not self.on_host(sitemap):
                continue  # a sitemap on another host is not this site's
            visited.add(sitemap)
            try:
                answer = self.fetcher.get(sitemap, self.on_host, limit=MAX_SITEMAP_BYTES)
            except SourceError:
                continue
            if answer.status != 200 or answer.body is None or b"<!ENTITY" in answer.body:
                continue  # entities are refused: a sitemap has no use for them
            try:
                tree = ElementTree.fromstring(answer.body)
            except ElementTree.ParseError:
                continue
            for loc in tree.iter(f"{_SITEMAP_NS}loc"):
                try:
                    url = absolute(sitemap, (loc.text or "").strip())
                except ValueError:
                    self.others += 1  # not an address: left out
                    continue
                if tree.tag == f"{_SITEMAP_NS}sitemapindex":
                    pending.append(url)
                elif url not in found and self.in_scope(url):
                    found[url] = None
                    if len(found) >= self.crawl.max_pages:
                        break
        return list(found)

    # --- fetching --------------------------------------------------------------------------

    def _fetch(self, url: str, stamp: str | None) -> Document | Skipped | Unchanged | None:
        """The page at `url` as a record under its path; None for what is not a page of this site
        (another type, another place, a page gone)."""
        path = self.path_of(url)
        try:
            answer = self.fetcher.get(url, self.in_scope, conditional(stamp))
        except Unreachable as err:
            return Skipped(path, f"cannot read it ({err})")
        except SourceError as err:
            return Skipped(path, f"{err}; the page stored before, if any, is kept")
        if answer.status in REDIRECTS:  # to a place out of the start URL's
            self.others += 1
            return None
        return self._record(path, answer, stamp)

    def _record(self, path: str, answer: Answer, stamp: str | None) -> Document | Skipped | Unchanged | None:
        if answer.status == 304 and stamp:
            return Unchanged(path)
        if answer.status in (404, 410):
            return None  # gone: the page stored before is removed
        if answer.status != 200:
            return Skipped(path, f"HTTP {answer.status} from {answer.url}: the page stored before, if any, is kept")
        content_type = answer.headers.get("Content-Type", "")
        kind = content_type.split(";")[0].strip().lower()
        if kind not in ("text/html", "application/xhtml+xml"):
            self.others += 1
            return (
                Skipped(path, f"not an HTML page ({kind or 'no content type'})")
                if path == self.path_of(self.start)
                else None
            )
        if answer.body is None:
            return Skipped(
                path,
                too_big(int(answer.headers.get("Content-Length") or 0) or self.limits.max_file_bytes + 1, self.limits),
            )
        return to_record(path, as_utf8(answer.body, content_type), self.limits, stamp_of(answer.headers))


def _language_of(stamp: str) -> str:
    """A page's stamp is its validator, a tab, and the language the crawl read ("etag "x"\ten")."""
    return stamp.rpartition("\t")[2] if "\t" in stamp else ""
