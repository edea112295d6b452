"""Ingest end to end against the real embedded PostgreSQL and the real local model."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgcite.config import Settings
from pgcite.embedding import OpenAIEmbedder
from pgcite.errors import EmbeddingError, ModelMismatchError
from pgcite.ingest import ingest, open_location
from pgcite.retrieval import search
from pgcite.store import Store
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
