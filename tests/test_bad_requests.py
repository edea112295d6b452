"""Client mistakes on the admin and log endpoints get the right 4xx, not a 500 or a 503 that blames
the database; and a read key learns nothing of the server's own paths (issue 30's defects 9-12)."""

from __future__ import annotations

import http.client
import io
import time
import urllib.parse
import zipfile

import pytest

from pgcite.core import Pgcite
from tests.http_server import call, running, served, warm_app

pytestmark = pytest.mark.slow

DOCS = {"spin.md": "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"}
core, base = served({"widgets": (DOCS, "https://widgets.example/")})


@pytest.fixture(scope="module")
def keys(core: Pgcite):
    made = {"admin": core.create_key("bad-admin", admin=True), "reader": core.create_key("bad-reader")}
    yield made
    for name in ("bad-admin", "bad-reader"):
        core.revoke_key(name)


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("a.md", "# A\n\nText.\n")
    return buffer.getvalue()


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    # Past the calendar: OverflowError in the span, a 500.
    ("GET", "/v1/log?since=99999999999d", None, 400),
    ("GET", "/v1/gaps?since=99999999999w", None, 400),
    ("GET", "/v1/log?since=99999-01-01", None, 400),
    # A NUL reached PostgreSQL and read "database unavailable" (503).
    ("GET", "/v1/log?source=%00", None, 400),
    ("DELETE", "/v1/sources/%00", None, 400),
    ("POST", "/v1/sources/%00/ingest", b"", 400),
    # A base URL that would begin every citation with script (or no address at all): refused before a job.
    ("POST", "/v1/sources/jam/ingest?base_url=javascript%3Aalert(1)", _zip(), 400),
    ("POST", "/v1/sources/jam/ingest?base_url=%2Fdocs%2F", _zip(), 400),
    # An interval PostgreSQL cannot hold (503), or a schedule nobody means.
    ("PUT", "/v1/sources/widgets/schedule", {"every": "99999999999999d"}, 400),
    ("PUT", "/v1/sources/widgets/schedule", {"every": "400d"}, 400),
])
def test_client_mistakes_are_4xx_with_one_line(base: str, keys: dict, method: str, path: str, body, status: int):
    reply = call(base, path, body, key=keys["admin"], method=method)
    assert reply.status == status, reply.text[:300]
    message = reply.body["error"]["message"]
    assert "\n" not in message and "database" not in message and "internal" not in message


@pytest.mark.parametrize("name", ["evil\u202etxt.md", "<b>docs</b>", "d" * 3000, "-leading", "a/b", "pgcite:x"])
def test_an_upload_under_a_name_no_source_may_have_is_refused_before_any_job(base: str, keys: dict, name: str):
    reply = call(base, f"/v1/sources/{urllib.parse.quote(name, safe='')}/ingest", _zip(), key=keys["admin"],
                 headers={"Content-Type": "application/zip"})
    assert reply.status in (400, 404) and "job" not in reply.body, reply.text[:300]
    if reply.status == 400:
        assert "a source name is 1-64 letters" in reply.body["error"]["message"]


def test_a_read_key_sees_no_server_path(base: str, keys: dict):
    (shown,) = call(base, "/v1/sources", key=keys["reader"]).body["sources"]
    assert shown["name"] == "widgets" and shown["documents"] == 1
    assert not {"location", "options", "last_sync"} & set(shown), shown
    (full,) = call(base, "/v1/sources", key=keys["admin"]).body["sources"]
    assert full["location"].startswith("/") and full["last_sync"]["trigger"] == "ingest"


def test_unsigned_webhooks_are_refused_before_their_body_and_count_against_the_limit(admin_dsn: str, embedder,
                                                                                      tmp_path):
    with warm_app(admin_dsn, embedder, tmp_path, {"widgets": (DOCS, "")}, serve_rate_limit=3,
                  webhook_secret="s3cret") as app, running(app) as url:
        port = int(url.rsplit(":", 1)[1])

        def unsigned(size: int, signature: str | None = None) -> tuple[int, float]:
            """Announce `size` bytes, send 1 KB of them, and time the answer."""
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.putrequest("POST", "/v1/sources/widgets/webhook")
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", str(size))
            if signature:
                connection.putheader("X-Hub-Signature-256", signature)
            connection.endheaders(b"{" + b" " * 1023)
            started = time.monotonic()
            status = connection.getresponse().status
            connection.close()
            return status, time.monotonic() - started

        # Refused from the headers alone: the 24 MB were never waited for (10 s timeout otherwise).
        first, seconds = unsigned(24 << 20)
        assert first == 401 and seconds < 5
        assert unsigned(24 << 20, "sha256=not-hex")[0] == 401
        assert unsigned(1024, "sha256=" + "0" * 64)[0] == 401  # well formed, read, and wrong
        assert unsigned(1024)[0] == 429  # the fourth refusal from this address within a minute
