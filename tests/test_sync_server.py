"""Syncs in the real server on loopback: POST /v1/sources/NAME/sync, GitHub and GitLab push
webhooks (signed, or refused), a burst made one sync, a sync asked for during another queued once,
and the schedule."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from pgcite.core import Pgcite
from pgcite.server.jobs import SYNC_SETTLE
from pgcite.server.webhooks import verify
from pgcite.errors import PgciteError
from tests.http_server import Reply, call, served
from tests.test_sync import PAGES, clone_pair, paths_found, push_change

SECRET = "hook-secret-for-tests"

core, base = served({"docs": (PAGES, "https://g.dev/"), "other": (PAGES, "")}, webhook_secret=SECRET)


def github(base: str, source: str, payload: dict, *, secret: str | None = SECRET, event: str = "push",
           form: bool = False) -> Reply:
    body = json.dumps(payload).encode()
    if form:  # GitHub's other content type
        body = urllib.parse.urlencode({"payload": body.decode()}).encode()
    headers = {"X-GitHub-Event": event, "Content-Type": "application/x-www-form-urlencoded" if form else
               "application/json"}
    if secret is not None:
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return call(base, f"/v1/sources/{source}/webhook", body, headers=headers)


def gitlab(base: str, source: str, payload: dict, *, token: str = SECRET) -> Reply:
    return call(base, f"/v1/sources/{source}/webhook", json.dumps(payload).encode(),
                headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": token, "Content-Type": "application/json"})


def push_payload(ref: str = "refs/heads/main") -> dict:
    return {"ref": ref, "repository": {"default_branch": "main"}, "commits": [{"id": "abc"}]}


def wait_done(base: str, key: str, job_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = call(base, f"/v1/jobs/{job_id}", key=key).body["job"]
        if job["state"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.1)


@pytest.fixture(scope="module")
def admin(core: Pgcite) -> str:
    key = core.create_key("sync-admin", admin=True)
    yield key
    core.revoke_key("sync-admin")


def folder(core: Pgcite, source: str) -> Path:
    return Path(core.source(source).location)


def test_a_signed_webhook_syncs_and_an_unsigned_one_starts_nothing(base: str, core: Pgcite, admin: str):
    (folder(core, "docs") / "tuning.md").write_text(PAGES["tuning.md"].replace("40", "65"))
    before = core.source("docs").synced_at
    refused = [github(base, "docs", push_payload(), secret=None), github(base, "docs", push_payload(), secret="wrong"),
               gitlab(base, "docs", push_payload(), token="wrong"),
               call(base, "/v1/sources/docs/webhook", push_payload())]
    assert [r.status for r in refused] == [401] * 4
    assert all(r.body["error"]["type"] == "unauthorized" for r in refused)
    assert "not signed" in refused[0].body["error"]["message"] and "does not match" in refused[1].body["error"]["message"]
    time.sleep(SYNC_SETTLE + 1.5)  # any sync started would have run by now
    assert core.source("docs").synced_at == before
    assert "65 turns" not in paths_found(core, "default speed turns", "docs")["tuning.md"]

    started = github(base, "docs", push_payload())
    assert started.status == 202 and started.body["job"]["trigger"] == "github", started.body
    assert "location" not in started.body["job"] and "/" not in json.dumps(started.body)  # no server path
    job = wait_done(base, admin, started.body["job"]["id"])
    assert job["state"] == "done" and "1 changed" in job["summary"], job
    assert "65 turns" in paths_found(core, "default speed turns", "docs")["tuning.md"]
    assert core.source("docs").last_sync["trigger"] == "github"


def test_gitlab_tokens_and_signatures_and_githubs_form_payloads_are_understood(base: str, core: Pgcite, admin: str):
    by_token = gitlab(base, "other", {"object_kind": "push", "ref": "refs/heads/main",
                                      "project": {"default_branch": "main"}})
    assert by_token.status == 202 and by_token.body["job"]["trigger"] == "gitlab"
    wait_done(base, admin, by_token.body["job"]["id"])
    as_form = github(base, "other", push_payload(), form=True)
    assert as_form.status == 202, as_form.body
    wait_done(base, admin, as_form.body["job"]["id"])

    # Not a push to the default branch: acknowledged, nothing started.
    ping = github(base, "other", {"zen": "Keep it simple.", "hook_id": 1}, event="ping")
    feature = github(base, "other", push_payload("refs/heads/feature"))
    tag = gitlab(base, "other", {"object_kind": "tag_push", "ref": "refs/tags/v1", "project": {"default_branch": "main"}})
    assert [r.status for r in (ping, feature, tag)] == [200, 200, 200]
    assert "not a push" in ping.body["ignored"] and "not to the default branch main" in feature.body["ignored"]
    assert "not a push" in tag.body["ignored"]
    assert github(base, "nope", push_payload()).status == 404  # signed, for a source that does not exist
    # Signed, and nested 100,000 deep: JSON's parser gives up (RecursionError, a 500 once).
    deep = b"[" * 100_000 + b"]" * 100_000
    headers = {"X-GitHub-Event": "push", "Content-Type": "application/json",
               "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), deep, hashlib.sha256).hexdigest()}
    nested = call(base, "/v1/sources/other/webhook", deep, headers=headers)
    assert nested.status == 400 and "nested too deep" in nested.body["error"]["message"]


def test_a_gitlab_signing_token_is_checked_with_its_timestamp():
    body, key = b'{"object_kind": "push"}', b"0123456789abcdef0123456789abcdef"
    secret = "whsec_" + base64.b64encode(key).decode()
    now = 1_800_000_000

    def headers(stamp: int, signed_key: bytes = key) -> dict:
        signature = base64.b64encode(hmac.new(signed_key, f"msg_1.{stamp}.".encode() + body, hashlib.sha256).digest())
        return {"webhook-id": "msg_1", "webhook-timestamp": str(stamp), "webhook-signature": f"v1,{signature.decode()}"}

    assert verify(headers(now), body, secret, now=now) == "gitlab"
    for wrong in (headers(now, b"another key"), headers(now - 3600)):  # forged, or replayed an hour later
        with pytest.raises(PgciteError) as refused:
            verify(wrong, body, secret, now=now)
        assert refused.value.kind == "unauthorized"
    # Timestamps int() cannot read (5,000 digits; superscript digits pass str.isdigit()) were a 500.
    for stamp in ("9" * 5000, "¹²³", "-5", " 1800000000"):
        with pytest.raises(PgciteError) as odd:
            verify({**headers(now), "webhook-timestamp": stamp}, body, secret, now=now)
        assert odd.value.kind == "unauthorized"
    with pytest.raises(PgciteError) as off:
        verify(headers(now), body, "", now=now)
    assert off.value.kind == "forbidden" and "PGCITE_WEBHOOK_SECRET" in str(off.value)


def test_two_webhooks_in_a_burst_make_one_sync(base: str, core: Pgcite, admin: str):
    (folder(core, "docs") / "burst.md").write_text("# Burst\n\nOne sync for two pushes.\n")
    first, second = github(base, "docs", push_payload()), github(base, "docs", push_payload())
    assert first.status == second.status == 202
    assert first.body["job"]["id"] == second.body["job"]["id"]  # the second joined the waiting sync
    job = wait_done(base, admin, first.body["job"]["id"])
    assert job["state"] == "done" and job["requests"] == 2 and "1 new" in job["summary"]
    synced = core.source("docs").synced_at
    time.sleep(SYNC_SETTLE + 1.5)
    assert core.source("docs").synced_at == synced  # and no second sync came after it


def test_a_sync_asked_for_during_a_sync_runs_once_after_it(base: str, core: Pgcite, admin: str):
    docs = folder(core, "docs")
    for n in range(60):  # enough new text to keep the first sync embedding for a few seconds
        (docs / f"bulk{n}.md").write_text(f"# Bulk {n}\n\n" + " ".join(f"word{n}x{i}" for i in range(150)) + "\n")
    first = call(base, "/v1/sources/docs/sync", b"", key=admin)
    assert first.status == 202 and first.headers["Location"] == f"/v1/jobs/{first.body['job']['id']}"
    deadline = time.monotonic() + 60
    while call(base, f"/v1/jobs/{first.body['job']['id']}", key=admin).body["job"]["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    (docs / "late.md").write_text("# Late\n\nWritten during the first sync.\n")
    during = [github(base, "docs", push_payload()), call(base, "/v1/sources/docs/sync", b"", key=admin),
              github(base, "docs", push_payload())]
    assert call(base, f"/v1/jobs/{first.body['job']['id']}", key=admin).body["job"]["state"] == "running"
    ids = {r.body["job"]["id"] for r in during}
    assert len(ids) == 1 and first.body["job"]["id"] not in ids  # one more sync, queued once
    assert wait_done(base, admin, first.body["job"]["id"])["state"] == "done"
    queued = wait_done(base, admin, ids.pop())
    assert queued["state"] == "done" and queued["requests"] == 3, queued
    assert "late.md" in paths_found(core, "Written during the first sync", "docs")


def test_sync_needs_an_admin_key_and_a_known_source(base: str, core: Pgcite, admin: str):
    assert call(base, "/v1/sources/docs/sync", b"").status == 401
    reader = core.create_key("sync-reader")
    try:
        assert call(base, "/v1/sources/docs/sync", b"", key=reader).status == 403
    finally:
        core.revoke_key("sync-reader")
    assert call(base, "/v1/sources/nope/sync", b"", key=admin).status == 404


def test_the_server_syncs_a_scheduled_source_on_its_interval(base: str, core: Pgcite, admin: str):
    set_every = call(base, "/v1/sources/other/schedule", {"every": "15m"}, key=admin, method="PUT")
    assert set_every.status == 200 and set_every.body == {"source": "other", "sync_interval": 900}
    assert core.source("other").sync_interval == 900
    wrong = call(base, "/v1/sources/other/schedule", {"every": "often"}, key=admin, method="PUT")
    assert wrong.status == 400 and "15m" in wrong.body["error"]["message"]
    assert call(base, "/v1/sources/other/schedule", {"every": "1h"}, method="PUT").status == 401

    (folder(core, "other") / "scheduled.md").write_text("# Scheduled\n\nPicked up by the schedule.\n")
    core.schedule("other", 2)  # shorter than `every` allows, to keep the test short
    try:
        deadline = time.monotonic() + 30
        while (core.source("other").last_sync or {}).get("trigger") != "schedule":
            assert time.monotonic() < deadline, "the scheduled sync did not come"
            time.sleep(0.2)
        assert core.source("other").last_sync["paths"]["new"] == ["scheduled.md"]
        assert "scheduled.md" in paths_found(core, "Picked up by the schedule", "other")
    finally:
        off = call(base, "/v1/sources/other/schedule", {"every": "off"}, key=admin, method="PUT")
    assert off.body["sync_interval"] is None and core.source("other").sync_interval is None


def test_a_push_webhook_brings_a_push_into_a_clone_ingested_with_pull(base: str, core: Pgcite, admin: str,
                                                                      tmp_path: Path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    author, served_clone = clone_pair(tmp_path)
    core.ingest(str(served_clone), source="repo", pull=True)
    push_change(author, "setup.md", PAGES["setup.md"] + "\n## Upgrade\n\nRun `gadget upgrade --all` monthly.\n")
    started = github(base, "repo", push_payload())
    job = wait_done(base, admin, started.body["job"]["id"])
    assert job["state"] == "done" and "1 changed" in job["summary"], job
    assert "gadget upgrade" in paths_found(core, "gadget upgrade monthly", "repo")["setup.md"]
    assert subprocess.run(["git", "-C", str(served_clone), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""
    core.remove_source("repo")
