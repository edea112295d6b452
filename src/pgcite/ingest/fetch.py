"""How the crawler (crawl.py) asks a site for one thing: a page, robots.txt, a sitemap.

Each answer has a deadline as a whole, not only per read: a server that sends one byte every
29 s never trips a 30 s read timeout, so every socket read, write and connect of a request waits
at most what is left of its deadline (`CrawlSettings.page_deadline`, and never past the crawl's
own, `CrawlSettings.deadline`), the deadline counted from the request's turn in the pace; the
pace's waits and Retry-After's sleeps stop at the crawl's deadline. Past either the request
raises `OutOfTime` (a SourceError), which says which deadline ended it. A read times out at the
deadline itself, so a request ends on time, whether the server drips its headers or its body.

Redirects are followed here, at most 5, only while the caller's scope admits the target: a
redirect out of it is answered as it is (the caller decides); a loop, or a `Location` that is
not an address, is a SourceError. A 429 or 503 is waited out as Retry-After says (a minute at
most, 3 times) and the pace halved. Only a 200's body is read, up to a limit: past it the body is
None, or, where the caller asks for `cut`, the part read (robots.txt, RFC 9309)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin

import httpcore2
import httpx2

from pgcite.errors import SourceError
from pgcite.ingest.sources import one_line

__all__ = [
    "REDIRECTS",
    "USER_AGENT",
    "Answer",
    "CrawlSettings",
    "Fetcher",
    "OutOfTime",
    "Unreachable",
    "conditional",
    "stamp_of",
]

USER_AGENT = "pgcite/0.1 (+https://pgcite.dev/crawler)"
MAX_REDIRECTS = 5
MAX_RETRIES = 3
MAX_WAIT = 60.0  # a Retry-After longer than this is an outage: the answer is taken as it is
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class CrawlSettings:
    concurrency: int = 4
    delay: float = 0.1  # seconds between two requests' starts, at least
    max_pages: int = 5000
    timeout: float = 30.0  # each read, connect and write
    page_deadline: float = 120.0  # one answer, headers and body, as a whole
    deadline: float = 3600.0  # the whole crawl: robots.txt, sitemaps and pages


class OutOfTime(SourceError):
    """A request that ran past its answer's deadline, or the crawl's."""


class Unreachable(SourceError):
    """No answer: the connection failed or broke ("ConnectError: ...", worded by the caller)."""


@dataclass(frozen=True)
class Answer:
    url: str  # the last URL asked (after the redirects followed)
    status: int
    headers: httpx2.Headers
    body: bytes | None  # a 200's body; None otherwise, or when over the limit (and not cut)
    cut: bool = False  # the body stopped at the limit


class Pace:
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

    def wait(self, until: float = float("inf")) -> bool:
        """Wait for this request's turn; False (and no turn taken) when it would come after `until`."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            if start > until:
                return False
            self._next = start + self.interval
        time.sleep(max(0.0, start - now))
        return True


# --- every socket operation bounded by the deadline of the request its thread is making ---------

_request = threading.local()


def _left(timeout: float | None) -> float | None:
    until = getattr(_request, "until", None)
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise OutOfTime("out of time")  # worded by Fetcher.get, which knows which deadline
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _BoundedStream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore2.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _client(timeout: float) -> httpx2.Client:
    transport = httpx2.HTTPTransport()
    # httpx2's transport takes no network backend of its own: its connection pool is replaced by
    # one (httpcore2's public class, httpx2's default limits) whose sockets are bounded as above.
    transport._pool = httpcore2.ConnectionPool(
        ssl_context=httpx2.create_ssl_context(),
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=_BoundedBackend(),
    )
    return httpx2.Client(
        timeout=timeout, follow_redirects=False, headers={"User-Agent": USER_AGENT}, transport=transport
    )


class Fetcher:
    """One crawl's requests: its client, its pace, its deadline (`start_crawl` sets it)."""

    def __init__(self, settings: CrawlSettings, max_bytes: int) -> None:
        self.settings = settings
        self.max_bytes = max_bytes
        self.client = _client(settings.timeout)
        self.pace = Pace(settings.delay)
        self.ends = float("inf")  # the crawl's deadline (time.monotonic())

    def start_crawl(self) -> None:
        self.ends = time.monotonic() + self.settings.deadline

    def get(
        self,
        url: str,
        within: Callable[[str], bool],
        headers: Mapping[str, str] | None = None,
        *,
        limit: int | None = None,
        cut: bool = False,
    ) -> Answer:
        """GET `url`, following redirects while `within` admits their targets; SourceError (one
        line, the URL left to the caller) when no answer came."""
        retries = hops = 0
        while True:
            answer = self._once(url, dict(headers or {}), self.max_bytes if limit is None else limit, cut)
            wait_for = _retry_after(answer.headers.get("Retry-After"))
            if answer.status in (429, 503) and retries < MAX_RETRIES and wait_for <= MAX_WAIT:
                if time.monotonic() + wait_for >= self.ends:
                    return answer  # no time left to wait it out
                retries += 1
                self.pace.slow_down()
                time.sleep(wait_for)  # as the site asks
                continue
            self.pace.answered()
            if answer.status not in REDIRECTS:
                return answer
            location = answer.headers.get("Location", "")
            try:
                target = urldefrag(urljoin(url, location))[0]
            except ValueError as err:  # urljoin's "Invalid IPv6 URL" and the like
                raise SourceError(
                    one_line(
                        f"redirects to a malformed address {location[:200]!r} ({err}): fix the redirect on the site"
                    )
                ) from None
            if not within(target):
                return answer  # leaving the scope: the caller says what that means
            if hops == MAX_REDIRECTS:
                raise SourceError(f"redirects more than {MAX_REDIRECTS} times: fix the redirect loop on the site")
            url, hops = target, hops + 1

    def _once(self, url: str, headers: dict[str, str], limit: int, cut: bool) -> Answer:
        if not self.pace.wait(self.ends):  # its turn, which may come late: not counted in its deadline
            raise self._late(self.ends)
        until = min(time.monotonic() + self.settings.page_deadline, self.ends)
        try:
            with self._bounded(until), self.client.stream("GET", url, headers=headers) as response:
                body: bytes | None = None
                over = False
                if response.status_code == 200:
                    chunks, size = [], 0
                    for chunk in response.iter_bytes():
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > limit:
                            break
                        if time.monotonic() >= until:  # a proxy's connection (HTTPS_PROXY) is not bounded above
                            raise OutOfTime("out of time")
                    body = b"".join(chunks)
                    if over := len(body) > limit:
                        body = body[:limit] if cut else None
                return Answer(str(response.url), response.status_code, response.headers, body, over and cut)
        except OutOfTime:
            raise self._late(until) from None
        except httpx2.InvalidURL as err:  # a link urllib reads and httpx2 does not (a control character)
            raise SourceError(one_line(f"not an address pgcite can ask for ({err})")) from None
        except httpx2.HTTPError as err:
            if time.monotonic() >= until:  # a read timed out at the deadline
                raise self._late(until) from None
            raise Unreachable(one_line(f"{type(err).__name__}: {err}")) from None

    def _late(self, until: float) -> OutOfTime:
        if until >= self.ends:
            return OutOfTime(
                f"not read: the crawl reached its deadline ({self.settings.deadline:g} s) first, the next sync reads it"
            )
        return OutOfTime(
            f"did not finish within {self.settings.page_deadline:g} s (a server sending it slowly, or never "
            "ending it): check the site's server"
        )

    @staticmethod
    @contextmanager
    def _bounded(until: float) -> Iterator[None]:
        _request.until = until
        try:
            yield
        finally:
            _request.until = None


def conditional(stamp: str | None) -> dict[str, str]:
    """The headers that ask for a page only if it changed since it was stamped (crawl.py's stamps)."""
    if not stamp:
        return {}
    kind, _, value = stamp.split("\t", 1)[0].partition(" ")
    return {"If-None-Match": value} if kind == "etag" else {"If-Modified-Since": value} if kind == "modified" else {}


def stamp_of(headers: Mapping[str, str]) -> str:
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
