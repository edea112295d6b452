"""What crawling a published site costs (issue 53): pages per second against the server's own rate
limit, requests the server refused, peak memory, and a re-crawl of the unchanged site, in one run.

A site of PAGES generated pages (headings, text, code, links to the next pages) is served on
loopback by a threaded server that allows RATE requests a second (beyond that it answers 429 with
Retry-After: 1) and answers If-None-Match with 304. Measured, in the same run:

- baseline: one GET after another, paced at the server's limit (the fastest it allows);
- crawl: `WebSource.scan` with its defaults (4 at once, starts 0.1 s apart), links followed;
- re-crawl: the same with the first crawl's stamps, as a sync sends them.

Usage: .venv/bin/python bench/crawl.py [PAGES] [RATE]
"""

from __future__ import annotations

import hashlib
import resource
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2

from pgcite.ingest.crawl import WebSource
from pgcite.ingest.sources import Document, Unchanged


def make_site(root: Path, pages: int) -> None:
    for i in range(pages):
        links = " ".join(f'<a href="page-{j}.html">page {j}</a>' for j in range(i + 1, min(i + 4, pages)))
        body = "".join(
            f'<h2 id="part-{k}">Part {k}</h2><p>{"Widgets turn sprockets into gears. " * 20}</p>'
            f"<pre><code>widget --part {k}</code></pre>"
            for k in range(5)
        )
        name = "index.html" if i == 0 else f"page-{i}.html"
        (root / name).write_text(
            f'<html lang="en"><body><nav>{links}</nav><main><h1>Page {i}</h1>{body}{links}</main></body></html>'
        )


class Server:
    def __init__(self, root: Path, rate: float) -> None:
        self.root, self.rate, self.counts = root, rate, Counter[str]()
        self.lock, self.allowance, self.last = threading.Lock(), rate, time.monotonic()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if not outer.admit():
                    outer.counts["429"] += 1
                    self.send_response(429)
                    self.send_header("Retry-After", "1")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                file = outer.root / (self.path.strip("/") or "index.html")
                if not file.is_file():
                    outer.counts["404"] += 1
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = file.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                status = 304 if self.headers.get("If-None-Match") == etag else 200
                outer.counts[str(status)] += 1
                self.send_response(status)
                self.send_header("ETag", etag)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body) if status == 200 else 0))
                self.end_headers()
                if status == 200:
                    self.wfile.write(body)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def admit(self) -> bool:
        """A token bucket of `rate` a second."""
        with self.lock:
            now = time.monotonic()
            self.allowance = min(self.rate, self.allowance + (now - self.last) * self.rate)
            self.last = now
            if self.allowance < 1:
                return False
            self.allowance -= 1
            return True


def main() -> None:
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 50.0
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_site(root, pages)
        server = Server(root, rate)
        names = ["index.html", *(f"page-{i}.html" for i in range(1, pages))]

        started = time.perf_counter()
        with httpx2.Client() as client:  # at the server's own limit, the fastest it allows
            ok = 0
            for i, name in enumerate(names):
                time.sleep(max(0.0, started + i / rate - time.perf_counter()))
                ok += client.get(server.url + name).status_code == 200
        baseline = time.perf_counter() - started
        refused_baseline = server.counts["429"]
        server.counts.clear()

        tracemalloc.start()
        started = time.perf_counter()
        items = list(WebSource(server.url).scan())
        crawl = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        crawled = Counter(server.counts)
        server.counts.clear()

        known = {i.path: i.stamp for i in items if isinstance(i, Document)}
        started = time.perf_counter()
        again = list(WebSource(server.url).scan(known))
        recrawl = time.perf_counter() - started
        rechecked = Counter(server.counts)
        server.http.shutdown()

    print(f"{pages} pages; server limit {rate:g} requests/s")
    print(
        f"baseline, one GET after another at the limit: {ok} pages in {baseline:.2f} s = {ok / baseline:.1f} pages/s "
        f"({refused_baseline} refused with 429)"
    )
    print(
        f"crawl: {len(items)} pages in {crawl:.2f} s = {len(items) / crawl:.1f} pages/s, "
        f"{len(items) / crawl / rate:.2f} x the server's limit, {crawl / baseline:.2f} x the baseline's time; "
        f"server answered {dict(crawled)}; Python peak {peak / 1e6:.1f} MB traced"
    )
    print(
        f"re-crawl, nothing changed: {sum(isinstance(i, Unchanged) for i in again)} unchanged in {recrawl:.2f} s "
        f"= {len(again) / recrawl:.1f} pages/s; server answered {dict(rechecked)}"
    )
    print(f"process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
