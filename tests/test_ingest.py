"""Ingest end to end against the real embedded PostgreSQL and the real local model."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pgcite.config import Settings
from pgcite.embedding.models import OpenAIEmbedder, make_embedder
from pgcite.errors import EmbeddingError, ModelMismatchError, PgciteError, SourceError
from pgcite.ingest.flow import ingest, open_location, web_base_url
from pgcite.ingest.sites import detect
from pgcite.retrieval.search import search
from pgcite.store import SearchFilter, Store
from tests.fake_openai import FakeOpenAI, closed_port

GUIDE = """---
title: ignored because there is an H1
---
# Widget Guide

Widgets turn sprockets into gears.

## Installing widgets

Run `widget install` on every node. It needs 2 GB of disk.

## Tuning widgets

Set `spin_rate` to control speed. The default is 40 turns per second.

### Safety

Never exceed 90 turns per second or the gearbox melts.

## Retiring widgets

Call `widget retire --now` and recycle the housing.
"""

FAQ = """# FAQ

## Do widgets float?

No. Widgets sink in water because they are made of lead.
"""


def _write_docs(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "guide").mkdir(exist_ok=True)
    (root / "guide" / "widgets.md").write_text(GUIDE)
    (root / "faq.md").write_text(FAQ)
    (root / "index.md").write_text("# Home\n\nWelcome to the widget docs.\n")
    return root


def _run(settings: Settings, embedder, root: Path, name: str = "w", base_url: str = "https://w.dev/"):
    with Store.open(settings) as store:
        report = ingest(open_location(str(root), settings), source_name=name, base_url=base_url,
                        settings=settings, store=store, embedder=embedder)
        rows = store.conn.execute("SELECT id, content FROM chunks ORDER BY id").fetchall()
    return report, dict(rows)


def test_ingest_is_idempotent_and_replaces_only_what_changed(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    first, chunks = _run(settings, embedder, root)
    assert (first.new, first.changed, first.unchanged, first.removed) == (3, 0, 0, 0)
    assert first.chunks_embedded == len(chunks) > 0 and first.chunks_reused == 0
    assert all(cid.startswith("w:") and "#" in cid for cid in chunks)

    for _ in range(2):
        again, same = _run(settings, embedder, root)
        assert (again.new, again.changed, again.unchanged, again.chunks_embedded) == (0, 0, 3, 0)
        assert same == chunks

    # Edit one section: only its chunk is embedded again, the rest come from the cache.
    (root / "guide" / "widgets.md").write_text(GUIDE.replace("40 turns", "45 turns"))
    edited, after_edit = _run(settings, embedder, root)
    assert (edited.changed, edited.unchanged, edited.chunks_embedded) == (1, 2, 1)
    assert edited.chunks_reused >= 3
    assert any("45 turns" in c for c in after_edit.values())
    assert not any("40 turns" in c for c in after_edit.values())

    # Drop two sections: their chunks are gone, nothing stale remains.
    trimmed = GUIDE.split("## Tuning widgets")[0]
    (root / "guide" / "widgets.md").write_text(trimmed)
    _, after_trim = _run(settings, embedder, root)
    assert not any("spin_rate" in c or "gearbox" in c or "retire" in c for c in after_trim.values())
    assert len(after_trim) < len(after_edit)

    # Delete a file: its document and chunks are removed.
    (root / "faq.md").unlink()
    removed, after_delete = _run(settings, embedder, root)
    assert removed.removed == 1
    assert not any(cid.startswith("w:faq.md#") for cid in after_delete)


def test_other_chunk_settings_re_process_unchanged_files(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    first, before = _run(settings, embedder, root)
    small = dataclasses.replace(settings, chunk_tokens=16)
    rechunked, after = _run(small, embedder, root)
    assert (rechunked.changed, rechunked.unchanged) == (3, 0)  # same bytes, other chunks
    assert len(after) > len(before) and rechunked.chunks_embedded > 0
    again, _ = _run(small, embedder, root)
    assert (again.changed, again.unchanged, again.chunks_embedded) == (0, 3, 0)
    back, restored = _run(settings, embedder, root)  # back to the defaults: the same chunks again
    assert back.changed == 3 and restored == before


def test_search_finds_the_right_section_with_provenance(settings: Settings, embedder, tmp_path: Path):
    _run(settings, embedder, _write_docs(tmp_path / "docs"))
    with Store.open(settings, read_only=True) as store:
        hits = search(store, embedder, "what is the maximum safe speed before the gearbox melts?", k=3)
    top = hits[0]
    assert top.path == "guide/widgets.md" and top.heading == "Safety"
    assert top.breadcrumb == "Widget Guide > Tuning widgets > Safety"
    assert top.url == "https://w.dev/guide/widgets.md#safety"  # a plain folder links to its files
    assert top.title == "Widget Guide" and 0 < top.score <= 1
    assert [h.rank_score for h in hits] == sorted((h.rank_score for h in hits), reverse=True)


def test_a_bad_file_is_reported_and_its_stored_version_kept(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    _, before = _run(settings, embedder, root)
    (root / "faq.md").write_bytes("# FAQ\n\ncaf\xe9 au lait\n".encode("latin-1"))
    (root / "blob.md").write_bytes(b"\x00\x01\x02binary")
    report, after = _run(settings, embedder, root)
    assert sorted(s.path for s in report.skipped) == ["blob.md", "faq.md"]
    assert report.removed == 0
    assert after == before  # the old faq.md is still there, nothing else changed


def test_embedding_server_down_leaves_stored_data_as_it_was(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    with FakeOpenAI(dimension=8) as fake:
        remote = dataclasses.replace(settings, embedding_url=fake.url, embedding_model=fake.model)
        _, before = _run(remote, OpenAIEmbedder(remote), root)
    (root / "faq.md").write_text(FAQ + "\n## Do widgets sing?\n\nOnly on Tuesdays.\n")
    down = dataclasses.replace(settings, embedding_url=f"http://127.0.0.1:{closed_port()}/v1",
                               embedding_model="fake-embed", embedding_retries=0)
    down_embedder = OpenAIEmbedder(down)
    down_embedder.__dict__["dimension"] = 8  # known from the first run; skips the probe request
    with pytest.raises(EmbeddingError, match="cannot reach the embedding server"):
        _run(down, down_embedder, root)
    with Store.open(settings) as store:
        after = dict(store.conn.execute("SELECT id, content FROM chunks ORDER BY id").fetchall())
    assert after == before


def test_another_model_against_stored_vectors_is_refused(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    _run(settings, embedder, root)
    with FakeOpenAI(dimension=8) as fake:
        remote = dataclasses.replace(settings, embedding_url=fake.url, embedding_model=fake.model)
        with pytest.raises(ModelMismatchError, match="all-MiniLM-L6-v2"):
            _run(remote, OpenAIEmbedder(remote), root)
        with Store.open(remote, read_only=True) as store, pytest.raises(ModelMismatchError):
            search(store, OpenAIEmbedder(remote), "widgets?")


def test_the_bundled_int8_model_is_another_model_to_the_database(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    _run(settings, embedder, root)
    int8 = dataclasses.replace(settings, embedding_model="all-MiniLM-L6-v2-int8")
    with pytest.raises(ModelMismatchError, match="holds vectors of all-MiniLM-L6-v2 .*EMBEDDING_MODEL=all-MiniLM-L6-v2,"):
        _run(int8, make_embedder(int8), root)


def test_two_ingests_of_one_source_at_once_make_no_duplicates(settings: Settings, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    env = dict(os.environ, PGCITE_DATABASE_URL=settings.database_url, PGCITE_HOME=str(settings.home))
    cmd = [sys.executable, "-m", "pgcite", "ingest", str(root), "--source", "w"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    summaries = sorted(out for out, _ in outputs)
    assert "3 new" in summaries[0] + summaries[1] and "3 unchanged" in summaries[0] + summaries[1]
    with Store.open(settings) as store:
        docs = store.conn.execute("SELECT count(*), count(DISTINCT path) FROM documents").fetchone()
        chunk_ids = store.conn.execute("SELECT count(*), count(DISTINCT (document_id, ord)) FROM chunks").fetchone()
    assert docs == (3, 3)
    assert chunk_ids[0] == chunk_ids[1]


SITES = Path(__file__).parent / "sites"


def test_a_versioned_site_answers_from_its_default_version(settings: Settings, embedder):
    report, _ = _run(settings, embedder, SITES / "docusaurus" / "website", name="gadgets", base_url="https://g.dev/")
    assert report.site == "docusaurus" and report.versions == ("2.0", "1.0", "next") and report.default_version == "2.0"
    assert "versions 2.0, 1.0, next (default 2.0)" in report.summary()
    question = "Which Node.js version do gadgets need?"
    with Store.open(settings, read_only=True) as store:
        default = search(store, embedder, question, k=10)
        older = search(store, embedder, question, k=10, filters=SearchFilter(version="1.0"))
        listed = store.list_sources()
    assert {h.path.split("/")[0] + "/" + h.path.split("/")[1] for h in default} == {"versioned_docs/version-2.0"}
    assert "18.0 or above" in default[0].content and default[0].url == "https://g.dev/docs/"
    assert older and all(h.path.startswith("versioned_docs/version-1.0/") for h in older)
    assert "14 or above" in older[0].content
    assert listed[0].site == "docusaurus" and listed[0].default_version == "2.0"
    assert set(listed[0].versions) == {"2.0", "1.0", "next"}
    with Store.open(settings) as store, pytest.raises(PgciteError, match="has versions of its own"):
        ingest(open_location(str(SITES / "docusaurus" / "website"), settings), source_name="gadgets", base_url="",
               settings=settings, store=store, embedder=embedder, version="v9")


def test_release_notes_rank_below_guides_unless_the_question_is_about_a_release(
        settings: Settings, embedder, tmp_path: Path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "retries.md").write_text("# Retries\n\n## Retry budget\n\nThe client retries a failed upload three times.\n")
    (root / "CHANGELOG.md").write_text("# Changelog\n\n## 2.4.0\n\nThe client retries a failed upload three times now.\n")
    _run(settings, embedder, root)
    with Store.open(settings, read_only=True) as store:
        kinds = dict(store.conn.execute("SELECT path, kind FROM documents").fetchall())
        guide = search(store, embedder, "How often does the client retry a failed upload?", k=2)
        release = search(store, embedder, "In which version does the client retry a failed upload?", k=2)
    assert kinds == {"retries.md": "page", "CHANGELOG.md": "changelog"}
    assert [h.path for h in guide] == ["retries.md", "CHANGELOG.md"]
    assert guide[1].rank_score < 0.85 * guide[0].rank_score  # demoted by CHANGELOG_FACTOR
    assert release[1].rank_score > 0.85 * release[0].rank_score  # ranked like any page


def test_a_changed_include_re_processes_the_pages_that_include_it(settings: Settings, embedder, tmp_path: Path):
    shutil.copytree(SITES / "mkdocs", tmp_path / "mkdocs")
    site = tmp_path / "mkdocs" / "site"
    first, chunks = _run(settings, embedder, site)
    assert first.site == "mkdocs" and first.new == 3 and any("app.spin(rate=40)" in c for c in chunks.values())
    assert first.problems and all("escape.md" in p for p in first.problems)
    again, _ = _run(settings, embedder, site)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 3)
    app = tmp_path / "mkdocs" / "examples" / "app.py"
    app.write_text(app.read_text().replace("rate=40", "rate=45"))
    edited, after = _run(settings, embedder, site)
    assert (edited.changed, edited.unchanged) == (1, 2)  # spinning.md includes app.py
    assert any("app.spin(rate=45)" in c for c in after.values())
    assert not any("app.spin(rate=40)" in c for c in after.values())


def test_a_folder_without_pages_is_an_error_and_removes_nothing(settings: Settings, embedder, tmp_path: Path):
    root = _write_docs(tmp_path / "docs")
    _, before = _run(settings, embedder, root)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a page")
    with pytest.raises(SourceError, match=r"no pages in .*empty: no \*\.md, \*\.markdown, \*\.mdx files .*\(1 other files\)"):
        _run(settings, embedder, empty)  # the same source name: nothing of it may go
    with pytest.raises(SourceError, match="no pages"):
        _run(settings, embedder, empty, name="new-one")
    with Store.open(settings) as store:
        after = dict(store.conn.execute("SELECT id, content FROM chunks ORDER BY id").fetchall())
        names = [s.name for s in store.list_sources()]
    assert after == before and names == ["w"]  # the failed new source left no row behind


@pytest.mark.parametrize(("files", "setting"), [
    ({"conf.py": 'project = "x"\nhtml_baseurl = "javascript:alert(document.domain)//"\n',
      "index.rst": "Home\n====\n\nText.\n"}, "conf.py's html_baseurl 'javascript:alert(document.domain)//'"),
    ({"mkdocs.yml": "site_name: x\nsite_url: 'javascript:alert(1)'\n", "docs/index.md": "# Home\n\nText.\n"},
     "mkdocs.yml's site_url 'javascript:alert(1)'"),
    ({"hugo.toml": 'baseURL = "data:text/html,<script>alert(1)</script>"\n', "content/_index.md": "# Home\n\nText.\n"},
     "the Hugo configuration's baseURL 'data:text/html,<script>alert(1)</script>'"),
])
def test_a_base_url_that_is_not_http_is_refused_wherever_it_is_read(
    settings: Settings, tmp_path: Path, files: dict[str, str], setting: str
):
    """`javascript:` from conf.py (or --base-url, mkdocs.yml, Hugo's config) began every citation URL."""
    for path, content in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    site = detect(open_location(str(tmp_path), settings))
    # The site's own: left out, said in the report; pages are cited by path.
    assert web_base_url("", site) == ("", [
        f"{setting} is not an http:// or https:// address: left out, so answers cite paths, not links; "
        "give --base-url https://... for links"
    ])
    assert web_base_url("https://docs.example.com/", site) == ("https://docs.example.com/", [])
    # One given (--base-url, an upload's base_url): refused before anything is stored.
    with Store.open(settings) as store:
        for given in ("javascript:alert(1)", "/docs/", "https://[bad", "ftp://docs.example.com/"):
            with pytest.raises(SourceError, match=rf"^the base URL {re.escape(repr(given))} is not an http:// or "
                               r"https:// address: give the address the docs are published at "
                               r"\(https://docs.example.com/\)$"):
                ingest(open_location(str(tmp_path), settings), source_name="x", base_url=given, settings=settings,
                       store=store, embedder=None)  # type: ignore[arg-type]  # refused before it is needed
        assert store.list_sources() == []
