"""Keeping the index in step with the docs: stamps that spare unchanged files, `pgcite ingest
--watch` as a real process, `pgcite sync` and `pgcite sources`, S3 syncs counted on a real moto
server, and the pull of a git clone."""

from __future__ import annotations

import concurrent.futures

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import boto3
import pytest

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import PgciteError, SourceError
from pgcite.ingest.locations import open_source
from pgcite.ingest.sources import Document, Unchanged
from pgcite.store import Store
from pgcite.ingest.sync import format_interval, parse_interval
from tests.test_cli import REPO, pgcite
from tests.test_sources import fake_aws

REFLECTED_WITHIN = 5.0  # seconds, the bar for --watch

PAGES = {
    "index.md": "# Home\n\nWelcome to the gadget docs.\n",
    "setup.md": "# Setup\n\n## Install\n\nRun `gadget install` once per host.\n",
    "tuning.md": "# Tuning\n\n## Speed\n\nThe default speed is 40 turns per second.\n",
}


def write(root: Path, pages: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (root / name).write_text(text)
    return root


def paths_found(app: Pgcite, question: str, source: str) -> dict[str, str]:
    """path -> the content of the sections a search finds in it."""
    from pgcite.vocabulary import SearchFilter

    found: dict[str, str] = {}
    for h in app.search(question, k=10, mode="text", filters=SearchFilter(source=source)):
        found[h.path] = found.get(h.path, "") + h.content
    return found


def filenode(store: Store, relation: str) -> int:
    """Changes when REFRESH MATERIALIZED VIEW rewrites the view."""
    return store.conn.execute("SELECT pg_relation_filenode(%s)", (relation,)).fetchone()[0]


# --- stamps -----------------------------------------------------------------------------------


def test_a_folder_scan_given_stamps_reads_only_what_changed(tmp_path: Path):
    root = write(tmp_path / "docs", PAGES)
    first = {d.path: d for d in open_source(str(root)).scan()}
    assert all(isinstance(d, Document) and d.stamp for d in first.values())
    known = {path: d.stamp for path, d in first.items()}
    assert all(isinstance(d, Unchanged) for d in open_source(str(root)).scan(known))

    (root / "setup.md").write_text(PAGES["setup.md"].replace("once", "twice"))  # same size, new bytes
    (root / "tuning.md").touch()  # the same bytes, a new mtime: read again (its checksum then says unchanged)
    again = {d.path: d for d in open_source(str(root)).scan(known)}
    assert isinstance(again["index.md"], Unchanged)
    assert isinstance(again["setup.md"], Document) and "twice" in again["setup.md"].text
    assert isinstance(again["tuning.md"], Document) and again["tuning.md"].checksum == first["tuning.md"].checksum


def test_a_zip_scan_given_stamps_reads_only_what_changed(tmp_path: Path):
    import zipfile

    def archive(pages: dict[str, str]) -> str:
        path = tmp_path / "site.zip"
        with zipfile.ZipFile(path, "w") as zf:
            for name, text in pages.items():
                zf.writestr(name, text)
        return str(path)

    known = {d.path: d.stamp for d in open_source(archive(PAGES)).scan()}
    edited = dict(PAGES, **{"setup.md": PAGES["setup.md"].replace("once", "twice")})
    again = {d.path: d for d in open_source(archive(edited)).scan(known)}
    assert [p for p, d in again.items() if isinstance(d, Document)] == ["setup.md"]


def test_an_unchanged_ingest_reads_no_file_and_refreshes_no_statistics(settings: Settings, embedder, tmp_path: Path):
    root = write(tmp_path / "docs", PAGES)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(root), source="g")
        with Store.open(settings) as store:
            before = filenode(store, "lexeme_idf")
        (root / "index.md").touch()
        report = app.ingest(str(root), source="g")
        assert (report.unchanged, report.changed, report.paths["changed"]) == (3, 0, [])
        with Store.open(settings) as store:
            assert filenode(store, "lexeme_idf") == before  # nothing written: nothing refreshed
            assert store.stored_files("g")["index.md"].stamp == open_source(str(root)).scan().__next__().stamp

        (root / "tuning.md").write_text(PAGES["tuning.md"].replace("40", "55"))
        report = app.ingest(str(root), source="g")
        assert report.paths == {"new": [], "changed": ["tuning.md"], "removed": []}
        with Store.open(settings) as store:
            assert filenode(store, "lexeme_idf") != before and not store.statistics_stale()
        assert "55 turns" in paths_found(app, "default speed turns", "g")["tuning.md"]


def test_statistics_left_stale_by_a_killed_ingest_are_refreshed_by_the_next(settings: Settings, embedder,
                                                                           tmp_path: Path):
    root = write(tmp_path / "docs", PAGES)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(root), source="g")
        with Store.open(settings) as store:
            # What an ingest killed between its writes and its refresh leaves behind.
            store.delete_documents("g", ["tuning.md"])
            assert store.statistics_stale()
            before = filenode(store, "lexeme_idf")
        (root / "tuning.md").unlink()
        app.ingest(str(root), source="g")  # nothing changed since the kill, yet the statistics are made current
        with Store.open(settings) as store:
            assert not store.statistics_stale() and filenode(store, "lexeme_idf") != before


# --- pgcite sync, pgcite sources ---------------------------------------------------------------


def test_sync_reads_a_source_again_as_it_was_ingested_and_sources_says_what_changed(database_url: str,
                                                                                  tmp_path: Path):
    root = write(tmp_path / "docs", PAGES)
    (root / "drafts").mkdir()
    (root / "drafts" / "wip.md").write_text("# Draft\n\nNot ready.\n")
    env = dict(os.environ, PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    done = pgcite("ingest", str(root), "--source", "g", "--exclude", "drafts/**", "--base-url", "https://g.dev/",
                  env=env)
    assert done.returncode == 0, done.stderr
    (root / "setup.md").write_text(PAGES["setup.md"] + "\n## Remove\n\nRun `gadget remove`.\n")
    (root / "extra.md").write_text("# Extra\n\nMore.\n")
    (root / "index.md").unlink()
    (root / "drafts" / "wip.md").write_text("# Draft\n\nStill not ready.\n")  # excluded, as at the ingest

    synced = pgcite("sync", "g", "--json", env=dict(env, PWD="/"), timeout=300)
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    assert report["paths"] == {"new": ["extra.md"], "changed": ["setup.md"], "removed": ["index.md"]}

    listed = pgcite("sources", env=env)
    assert "last synced" in listed.stdout and "(sync, " in listed.stdout
    assert "1 new, 1 changed, 1 removed (extra.md, setup.md, index.md)" in listed.stdout
    (row,) = json.loads(pgcite("sources", "--json", env=env).stdout)["sources"]
    assert row["options"]["exclude"] == ["drafts/**"] and row["options"]["base_url"] == "https://g.dev/"
    assert row["last_sync"]["trigger"] == "sync" and row["last_sync"]["error"] == ""

    scheduled = pgcite("sources", "schedule", "g", "15m", env=env)
    assert scheduled.returncode == 0 and "every 15m" in scheduled.stdout
    assert json.loads(pgcite("sources", "--json", env=env).stdout)["sources"][0]["sync_interval"] == 900
    assert "synced every 15m" in pgcite("sources", env=env).stdout
    wrong = pgcite("sources", "schedule", "g", "often", env=env)
    assert wrong.returncode == 1 and "90s, 15m, 2h or 1d" in wrong.stderr and "Traceback" not in wrong.stderr
    assert pgcite("sources", "schedule", "nope", "1h", env=env).returncode == 2  # a typo: a usage error


def test_a_sync_of_a_source_whose_folder_is_gone_fails_in_one_line_and_is_recorded(settings: Settings, embedder,
                                                                                 tmp_path: Path):
    root = write(tmp_path / "docs", PAGES)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(root), source="g")
        root.rename(tmp_path / "moved")
        with pytest.raises(SourceError, match="not there any more"):
            app.sync("g")
        last = app.source("g").last_sync
        assert "not there any more" in last["error"] and last["trigger"] == "sync"
        assert app.source("g").documents == 3  # nothing stored was lost


def test_intervals_as_people_write_them():
    assert [parse_interval(t) for t in ("90s", "15m", "2h", "1d", "30", "off")] == [90, 900, 7200, 86400, 1800, None]
    assert [format_interval(s) for s in (90, 900, 7200, 86400)] == ["90s", "15m", "2h", "1d"]
    for bad in ("5s", "soon", "1w", "-1m"):
        with pytest.raises(PgciteError):
            parse_interval(bad)


# --- pgcite ingest --watch --------------------------------------------------------------------


@contextlib.contextmanager
def watching(root: Path, env: dict[str, str]) -> Iterator[queue.Queue]:
    """`pgcite ingest ROOT --watch --json` as a real process; yields its passes (JSON reports) as they come."""
    process = subprocess.Popen([sys.executable, "-m", "pgcite", "ingest", str(root), "--source", "w", "--watch",
                                "--json"], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    passes: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [passes.put(json.loads(line)) for line in process.stdout], daemon=True).start()
    try:
        yield passes
    finally:
        process.terminate()
        process.wait(timeout=30)


def reflected(check, deadline: float) -> float:
    """Seconds until check() holds (searching every 0.1 s), failing at `deadline` seconds."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < deadline, "not reflected in search in time"
        time.sleep(0.1)
    return time.monotonic() - started


def test_watch_reflects_an_edit_an_addition_and_a_deletion_within_seconds(database_url: str, settings: Settings,
                                                                         embedder, tmp_path: Path):
    root = write(tmp_path / "docs", PAGES)
    env = dict(os.environ, PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    with watching(root, env) as passes, Pgcite(settings, embedder=embedder) as app:
        first = passes.get(timeout=300)
        assert first["new"] == 3
        time.sleep(1.0)  # the watch starts once the first pass is reported

        (root / "tuning.md").write_text(PAGES["tuning.md"].replace("40", "75"))
        took = [reflected(lambda: "75 turns" in paths_found(app, "default speed turns", "w").get("tuning.md", ""),
                          REFLECTED_WITHIN)]
        (root / "pricing.md").write_text("# Pricing\n\nA gadget licence costs 12 florins a month.\n")
        took.append(reflected(lambda: "pricing.md" in paths_found(app, "gadget licence florins", "w"),
                              REFLECTED_WITHIN))
        (root / "setup.md").unlink()
        took.append(reflected(lambda: "setup.md" not in paths_found(app, "gadget install host", "w"),
                              REFLECTED_WITHIN))
        changes = [passes.get(timeout=10) for _ in range(3)]
        assert [c["paths"] for c in changes] == [
            {"new": [], "changed": ["tuning.md"], "removed": []},
            {"new": ["pricing.md"], "changed": [], "removed": []},
            {"new": [], "changed": [], "removed": ["setup.md"]},
        ]
        assert all(c["chunks_embedded"] <= 1 for c in changes)  # the rest came from the cache

        # A burst of saves (a checkout of five files, an editor saving twice) is one pass.
        for n in range(5):
            (root / f"burst{n}.md").write_text(f"# Burst {n}\n\nPage {n} of a checkout.\n")
        (root / "burst0.md").write_text("# Burst 0\n\nPage 0 of a checkout, saved again.\n")
        burst = passes.get(timeout=10)
        assert sorted(burst["paths"]["new"]) == [f"burst{n}.md" for n in range(5)]
        time.sleep(3)
        assert passes.empty()  # no second pass for the same burst
        assert app.source("w").last_sync["trigger"] == "watch"
    print(f"reflected in search after {', '.join(f'{t:.2f}' for t in took)} s (edit, addition, deletion)")


def test_watch_follows_a_file_the_pages_include_from_beside_the_folder(database_url: str, settings: Settings,
                                                                        embedder, tmp_path: Path):
    project = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "sites" / "mkdocs", project)  # site/ includes ../examples/app.py
    env = dict(os.environ, PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    with watching(project / "site", env) as passes, Pgcite(settings, embedder=embedder) as app:
        first = passes.get(timeout=300)
        assert "../examples/app.py" in first["included"]
        time.sleep(1.0)
        app_py = project / "examples" / "app.py"
        app_py.write_text(app_py.read_text().replace("rate=40", "rate=55"))
        took = reflected(lambda: "rate=55" in paths_found(app, "app.spin rate", "w").get("docs/guide/spinning.md", ""),
                         REFLECTED_WITHIN)
        assert passes.get(timeout=10)["paths"] == {"new": [], "changed": ["docs/guide/spinning.md"], "removed": []}
    print(f"an edit of an included file reflected in search after {took:.2f} s")


def test_watch_refuses_s3_in_one_line_before_reading_it(database_url: str, tmp_path: Path):
    env = dict(os.environ, PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"),
               AWS_ENDPOINT_URL="http://127.0.0.1:9")  # nothing listens: reading the bucket would fail otherwise
    done = pgcite("ingest", "s3://bucket/docs", "--watch", env=env, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "--watch reads a folder or a .zip" in done.stderr


# --- S3: a sync downloads only what changed, counted on the moto server ------------------------


class CountingMotoServer:
    """moto's S3 on a loopback port, behind a WSGI layer that records every request it serves."""

    def __init__(self) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        app = DomainDispatcherApplication(create_backend_app)
        self.requests: list[tuple[str, str, str]] = []  # method, path, query

        def counted(environ, start_response):
            self.requests.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("QUERY_STRING", "")))
            return app(environ, start_response)

        self._server = make_server("127.0.0.1", 0, counted, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def downloads(self, bucket: str) -> list[str]:
        """The objects fetched (GET /bucket/key), not the listings (GET /bucket?list-type=2)."""
        return [path for method, path, _ in self.requests if method == "GET" and path.startswith(f"/{bucket}/")
                and path != f"/{bucket}/"]

    def close(self) -> None:
        self._server.shutdown()


@pytest.fixture
def counting_s3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[CountingMotoServer]:
    server = CountingMotoServer()
    fake_aws(monkeypatch, tmp_path, server.url)
    yield server
    server.close()


def test_an_s3_sync_of_an_unchanged_bucket_downloads_no_object(counting_s3: CountingMotoServer, settings: Settings,
                                                               embedder):
    s3 = boto3.client("s3", endpoint_url=counting_s3.url)
    s3.create_bucket(Bucket="team-docs")
    for name, text in PAGES.items():
        s3.put_object(Bucket="team-docs", Key=f"docs/{name}", Body=text.encode())
    with Pgcite(settings, embedder=embedder) as app:
        first = app.ingest("s3://team-docs/docs", source="s3docs")
        assert first.new == 3 and sorted(counting_s3.downloads("team-docs")) == [f"/team-docs/docs/{n}" for n in
                                                                                   sorted(PAGES)]
        counting_s3.requests.clear()
        unchanged = app.sync("s3docs")
        assert unchanged.unchanged == 3 and counting_s3.requests  # the bucket was listed...
        assert counting_s3.downloads("team-docs") == []  # ...and no object downloaded

        s3.put_object(Bucket="team-docs", Key="docs/tuning.md", Body=PAGES["tuning.md"].replace("40", "60").encode())
        counting_s3.requests.clear()
        changed = app.sync("s3docs")
        assert changed.paths["changed"] == ["tuning.md"]
        assert counting_s3.downloads("team-docs") == ["/team-docs/docs/tuning.md"]
        assert "60 turns" in paths_found(app, "default speed turns", "s3docs")["tuning.md"]


# --- a clone, pulled before its sync ------------------------------------------------------------


def git(*args: str, cwd: Path) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def clone_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A repository (bare, the 'git host'), a clone that pgcite reads, and a clone the writer pushes from."""
    author = write(tmp_path / "author", PAGES)
    git("init", "-q", "-b", "main", cwd=author)
    git("add", ".", cwd=author)
    git("commit", "-q", "-m", "docs", cwd=author)
    git("clone", "-q", "--bare", str(author), str(tmp_path / "host.git"), cwd=tmp_path)
    git("remote", "add", "origin", str(tmp_path / "host.git"), cwd=author)
    git("fetch", "-q", "origin", cwd=author)
    git("branch", "-q", "--set-upstream-to=origin/main", "main", cwd=author)
    git("clone", "-q", str(tmp_path / "host.git"), str(tmp_path / "served"), cwd=tmp_path)
    return author, tmp_path / "served"


def push_change(author: Path, name: str, text: str, branch: str = "main") -> None:
    (author / name).write_text(text)
    git("commit", "-q", "-am", f"edit {name}", cwd=author)
    git("push", "-q", "origin", f"HEAD:{branch}", cwd=author)


def test_two_syncs_of_a_pulled_clone_at_once_take_turns(settings: Settings, embedder, tmp_path: Path):
    """The pull ran outside the source's lock: two syncs after a push pulled at once, and one failed
    `cannot lock ref ...; fix the clone` though the clone was fine."""
    author, served = clone_pair(tmp_path)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(served), source="repo", pull=True)
        for round_ in range(3):
            push_change(author, "tuning.md", PAGES["tuning.md"].replace("40", str(50 + round_)))
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                reports = [f.result() for f in [pool.submit(app.sync, "repo") for _ in range(2)]]
            assert sorted(len(r.paths["changed"]) for r in reports) == [0, 1]  # one read it, the other found it done
            assert f"{50 + round_} turns" in paths_found(app, "default speed turns", "repo")["tuning.md"]


def test_a_sync_of_a_clone_ingested_with_pull_reads_what_was_pushed(settings: Settings, embedder, tmp_path: Path):
    author, served = clone_pair(tmp_path)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(served), source="repo", pull=True)
        push_change(author, "tuning.md", PAGES["tuning.md"].replace("40", "85"))
        report = app.sync("repo")
        assert report.paths["changed"] == ["tuning.md"]
        assert "85 turns" in paths_found(app, "default speed turns", "repo")["tuning.md"]

        (served / "tuning.md").write_text("# Local edit\n")  # conflicts with the next push
        push_change(author, "tuning.md", PAGES["tuning.md"].replace("40", "95"))
        with pytest.raises(SourceError, match="git pull in .* failed"):
            app.sync("repo")
        assert "git pull" in app.source("repo").last_sync["error"]

        git("checkout", "-q", "--", "tuning.md", cwd=served)
        git("remote", "set-url", "origin", "http://bot:tok123@127.0.0.1:9/docs.git", cwd=served)  # nothing listens
        with pytest.raises(SourceError, match="git pull in .* failed .*127.0.0.1"):
            app.sync("repo")
        assert "tok123" not in app.source("repo").last_sync["error"]  # readers see the reason, never the token
