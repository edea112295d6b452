"""Who may read and write over HTTP: keys, scopes, admin writes and ingest jobs, body limits and
rate limits, against a real server on loopback."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile

import openai
import pytest

from pgcite.core import Pgcite
from tests.http_server import call, running, served

pytestmark = pytest.mark.slow

ALPHA = {"alpha.md": "# Alpha Widgets\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"}
# Every word of beta's is its own: none may reach a caller scoped to alpha.
BETA = {"beta.md": "# Zephyrine Gearbox\n\n## Lubrication\n\nGrease the zephyrine gearbox with quokkalube every "
                   "17 fortnights; the default spin rate of a gearbox is 12 turns per second.\n"}
BETA_MARKERS = ("Zephyrine", "zephyrine", "quokkalube", "fortnights", "beta.md")


def _zip(docs: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, text in docs.items():
            z.writestr(name, text)
    return buffer.getvalue()


core, base = served({"alpha": (ALPHA, ""), "beta": (BETA, "")}, serve_max_request_bytes=10_000,
                    serve_max_upload_bytes=200_000)


def test_without_keys_reads_are_open_and_writes_are_off(base: str, core: Pgcite):
    assert not core.keys()
    listed = call(base, "/v1/sources", key="anything")  # OpenAI clients always send a key
    assert listed.status == 200 and {s["name"] for s in listed.body["sources"]} == {"alpha", "beta"}
    removal = call(base, "/v1/sources/alpha", method="DELETE")
    assert removal.status == 403 and "the server has none" in removal.body["error"]["message"]


@pytest.fixture(scope="module")
def keys(core: Pgcite, base: str):
    made = {"alpha": core.create_key("alpha-reader", sources=["alpha"]),
            "admin": core.create_key("ops", admin=True)}
    yield made
    for name in ("alpha-reader", "ops"):
        core.revoke_key(name)


def test_once_a_read_key_exists_reads_need_one(base: str, keys: dict):
    anonymous = call(base, "/v1/search?q=spin+rate")
    assert anonymous.status == 401 and anonymous.headers["WWW-Authenticate"] == "Bearer"
    guessed = call(base, "/v1/search?q=spin+rate", key="pgc_not-a-key")
    assert guessed.status == 401 and "not valid" in guessed.body["error"]["message"]
    assert call(base, "/healthz").status == 200  # probes need no key


def test_a_scoped_key_never_sees_another_source(base: str, keys: dict):
    key = keys["alpha"]
    question = "What is the default spin rate of a zephyrine gearbox lubricated with quokkalube?"
    client = openai.OpenAI(base_url=base + "/v1", api_key=key)
    texts = [
        call(base, "/v1/sources", key=key).text,
        call(base, "/v1/search?q=" + urllib.request.quote(question) + "&k=10", key=key).text,
        call(base, "/v1/ask", {"question": question}, key=key).text,
        call(base, "/v1/ask", {"question": question, "stream": True}, key=key).text,
        client.chat.completions.create(model="pgcite", messages=[{"role": "user", "content": question}]).to_json(),
        "".join(c.to_json() for c in client.chat.completions.create(
            model="pgcite", stream=True, messages=[{"role": "user", "content": question}])),
        json.dumps([m.id for m in client.models.list()]),
    ]
    for text in texts:
        text = text.replace(question, "")  # the caller's own words come back as the question
        assert not [m for m in BETA_MARKERS if m in text], text[:500]
    assert "alpha" in texts[0] and '"beta"' not in texts[0]
    assert json.loads(texts[6]) == ["pgcite", "pgcite:alpha"]
    for path in ("/v1/search?q=gearbox&source=beta", "/v1/search?q=gearbox&source=nope"):
        hidden = call(base, path, key=key)
        assert hidden.status == 404 and hidden.body["error"]["type"] == "not_found"  # hidden reads as absent
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="pgcite:beta", messages=[{"role": "user", "content": question}])
    everything = call(base, "/v1/search?q=gearbox&k=10", key=keys["admin"])
    assert everything.status == 200 and any(r["source"] == "beta" for r in everything.body["results"])


def test_a_read_key_may_not_write(base: str, keys: dict):
    removal = call(base, "/v1/sources/alpha", key=keys["alpha"], method="DELETE")
    assert removal.status == 403 and "may only read" in removal.body["error"]["message"]


def test_an_admin_ingests_a_zip_as_a_job_while_searches_go_on(base: str, keys: dict):
    docs = {f"page{n}.md": f"# Page {n}\n\n## Detail {n}\n\nThe marmalade setting {n} is {n * 7} grams.\n"
            for n in range(40)}
    started = call(base, "/v1/sources/jam/ingest?base_url=https://jam.dev/", _zip(docs), key=keys["admin"],
                   headers={"Content-Type": "application/zip"})
    assert started.status == 202, started.body
    job = started.body["job"]
    assert job["source"] == "jam" and job["state"] in ("queued", "running")
    searched_while_running = 0
    deadline = time.monotonic() + 120
    while job["state"] in ("queued", "running") and time.monotonic() < deadline:
        assert call(base, "/v1/search?q=spin+rate&source=alpha", key=keys["alpha"]).status == 200
        job = call(base, f"/v1/jobs/{job['id']}", key=keys["admin"]).body["job"]
        searched_while_running += job["state"] == "running"
    assert job["state"] == "done", job
    assert job["files_read"] == 40 and "40 new" in job["summary"]
    assert searched_while_running >= 1  # a search was answered while the ingest ran
    found = call(base, "/v1/search?q=marmalade+setting+12&source=jam&k=1", key=keys["admin"])
    assert found.body["results"][0]["url"].startswith("https://jam.dev/")
    # The upload is not kept: the source says so, and a sync of it says to upload again.
    (jam,) = [s for s in call(base, "/v1/sources", key=keys["admin"]).body["sources"] if s["name"] == "jam"]
    assert jam["location"] == "(uploaded zip)" and jam["last_sync"]["trigger"] == "upload"
    synced = call(base, "/v1/sources/jam/sync", b"", key=keys["admin"]).body["job"]
    deadline = time.monotonic() + 30
    while synced["state"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.1)
        synced = call(base, f"/v1/jobs/{synced['id']}", key=keys["admin"]).body["job"]
    assert synced["state"] == "failed" and "was uploaded as a zip" in synced["error"], synced

    removal = call(base, "/v1/sources/jam", key=keys["admin"], method="DELETE")
    assert removal.status == 200 and removal.body == {"removed": "jam"}
    assert call(base, "/v1/sources/jam", key=keys["admin"], method="DELETE").status == 404


def test_ingest_refuses_what_is_not_a_zip_and_unknown_jobs(base: str, keys: dict):
    text = call(base, "/v1/sources/jam/ingest", b"# not a zip\n", key=keys["admin"])
    assert text.status == 400 and "not a zip" in text.body["error"]["message"]
    # No body: read an existing source again, and there is none of that name.
    assert call(base, "/v1/sources/nothing/ingest", b"", key=keys["admin"]).status == 404
    assert call(base, "/v1/jobs/feedface", key=keys["admin"]).status == 404


def test_a_revoked_key_is_refused(base: str, core: Pgcite, keys: dict):
    key = core.create_key("short-lived", sources=["alpha"])
    assert call(base, "/v1/sources", key=key).status == 200
    core.revoke_key("short-lived")
    assert call(base, "/v1/sources", key=key).status == 401


def test_oversize_bodies_get_413(base: str, keys: dict):
    big = {"question": "spin? " + "x" * 20_000}
    announced = call(base, "/v1/ask", big, key=keys["alpha"])
    assert announced.status == 413 and announced.body["error"]["type"] == "too_large"
    chunked = urllib.request.Request(base + "/v1/ask", data=iter([json.dumps(big).encode()]), headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {keys['alpha']}", "Transfer-Encoding": "chunked"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(chunked, timeout=30)
    assert caught.value.code == 413
    # Chunked and still coming when the limit is passed: the rest is read, then the 413 is sent.
    pieces = [b'{"question": "spin? '] + [b"x" * 100_000] * 40 + [b'"}']
    streamed = urllib.request.Request(base + "/v1/ask", data=iter(pieces), headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {keys['alpha']}", "Transfer-Encoding": "chunked"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(streamed, timeout=30)
    assert caught.value.code == 413 and json.loads(caught.value.read())["error"]["type"] == "too_large"
    assert call(base, "/v1/sources/jam/ingest", b"PK\x03\x04" + b"\0" * 300_000, key=keys["admin"]).status == 413


def test_a_caller_over_the_rate_limit_gets_429_with_retry_after(core: Pgcite, embedder, keys: dict):
    limited = Pgcite(dataclasses.replace(core.settings, serve_rate_limit=3), embedder=embedder)
    with limited, running(limited) as url:
        allowed = [call(url, "/v1/sources", key=keys["alpha"]).status for _ in range(3)]
        over = call(url, "/v1/sources", key=keys["alpha"])
        other = call(url, "/v1/sources", key=keys["admin"]).status  # each key has its own allowance
        guesses = [call(url, "/v1/sources", key="pgc_guess").status for _ in range(4)]
    assert allowed == [200, 200, 200] and other == 200
    assert over.status == 429 and 1 <= int(over.headers["Retry-After"]) <= 60
    assert guesses == [401, 401, 401, 429]  # guessing keys is limited too


def test_two_servers_on_one_database_share_the_limit(core: Pgcite, embedder, keys: dict):
    """Limits were per process: 40 requests of one key alternating between two servers all got 200."""
    settings = dataclasses.replace(core.settings, serve_rate_limit=4)
    key = core.create_key("two-servers")  # a key of its own: counts live a minute in the database
    try:
        with Pgcite(settings, embedder=embedder) as first, Pgcite(settings, embedder=embedder) as second, \
                running(first) as one, running(second) as two:
            statuses = [call(url, "/v1/search?q=spin", key=key).status for url in (one, two) * 3]
    finally:
        core.revoke_key("two-servers")
    assert statuses == [200, 200, 200, 200, 429, 429]


def test_keys_from_the_command_line(core: Pgcite):
    env = {**os.environ, "PGCITE_DATABASE_URL": core.settings.database_url, "PGCITE_HOME": str(core.settings.home)}
    run = lambda *args: subprocess.run([sys.executable, "-m", "pgcite", "keys", *args], env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=60)
    made = run("create", "ci-bot", "--sources", "alpha,gamma")
    assert made.returncode == 0, made.stderr
    key = made.stdout.splitlines()[-1]
    assert key.startswith("pgc_") and len(key) > 40 and "gamma" in made.stderr  # not ingested yet: said
    assert core.caller(f"Bearer {key}").sources == ("alpha", "gamma")
    listed = json.loads(run("list", "--json").stdout)["keys"]
    assert {"name": "ci-bot", "sources": ["alpha", "gamma"], "admin": False} .items() <= [
        k for k in listed if k["name"] == "ci-bot"][0].items()
    assert key not in run("list").stdout
    assert run("create", "ci-bot").returncode == 1  # the name is taken
    assert run("revoke", "ci-bot").returncode == 0
    again = run("revoke", "ci-bot")
    assert again.returncode == 1 and "no live key" in again.stderr and "Traceback" not in again.stderr
