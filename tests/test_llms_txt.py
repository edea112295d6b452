"""llms.txt (llmstxt.org) over HTTP and as files, on two real sites from ../shared/corpora: Marten
(VitePress) and Docusaurus (MDX, three versions). The files are parsed by the format's own rules.
Publishing needs no vectors, so the pages are embedded by a word-hashing stand-in, not the model."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.embedding.models import LocalEmbedder
from tests.conftest import _drop_database, _fresh_database, corpus
from tests.http_server import call, running

CAP = 400_000  # llms_full_max_bytes of the export test: each site's default version holds more


class HashedWords:
    """The bundled model's tokenizer and window, with vectors that hash words into 64 dimensions."""

    model, window, document_prefix, document_input_type, dimension = "hashed-words", 256, "", "", 64

    @cached_property
    def _local(self) -> LocalEmbedder:
        return LocalEmbedder()

    @property
    def tokenizer(self):
        return self._local.tokenizer

    def count_tokens(self, text: str) -> int:
        return self._local.count_tokens(text)

    def embed_documents(self, texts) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, hashlib.blake2b(word.encode(), digest_size=1).digest()[0] % self.dimension] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_queries(self, texts) -> np.ndarray:
        return self.embed_documents(texts)


@dataclass
class LlmsTxt:
    """A parsed llms.txt: the format's H1, blockquote, free text, and H2 sections of link lists."""

    title: str
    summary: str
    sections: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)  # name -> (text, url, note)


_LINK = re.compile(r"^- \[([^\]]+)\]\(([^)\s]+)\)(?::\s*(.*))?$")


def parse_llms_txt(text: str) -> LlmsTxt:
    lines = text.splitlines()
    assert lines[0].startswith("# ") and not lines[0].startswith("## "), "the file starts with its one H1"
    assert sum(1 for line in lines if re.match(r"^# ", line)) == 1, "exactly one H1"
    quote = next(line for line in lines[1:] if line.strip())
    assert quote.startswith("> "), "the H1 is followed by a blockquote summary"
    parsed, section = LlmsTxt(lines[0][2:], quote[2:]), None
    for line in lines[lines.index(quote) + 1 :]:
        if line.startswith("## "):
            section = parsed.sections.setdefault(line[3:], [])
        elif line.startswith("#"):
            raise AssertionError(f"only H2 sections after the summary: {line!r}")
        elif section is not None and line.strip():
            match = _LINK.match(line)
            assert match, f"a section holds only '- [name](url): notes' lines: {line!r}"
            section.append(match.groups(""))
    assert parsed.sections and all(parsed.sections.values())
    return parsed


@pytest.fixture(scope="module")
def sites(admin_dsn: str, tmp_path_factory):
    marten, docusaurus = corpus("marten-docs"), corpus("docusaurus-docs") / "website"
    root = tmp_path_factory.mktemp("llms")
    name = _fresh_database(admin_dsn)
    settings = Settings(home=root / "home", database_url=make_conninfo(admin_dsn, dbname=name))
    try:
        with Pgcite(settings, embedder=HashedWords()) as app:
            app.ingest(str(marten), source="marten", base_url="https://martendb.io/", site="vitepress")
            app.ingest(str(docusaurus), source="docusaurus", base_url="https://docusaurus.io/")
            with running(app) as base:
                yield app, base
    finally:
        _drop_database(admin_dsn, name)


def _md_links(parsed: LlmsTxt) -> list[str]:
    return [url for links in parsed.sections.values() for _, url, _ in links]


def test_llms_txt_lists_every_page_of_the_default_version_only(sites):
    app, base = sites
    for source in ("marten", "docusaurus"):
        reply = call(base, f"/{source}/llms.txt")
        assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
        parsed = parse_llms_txt(reply.text)
        assert parsed.title == source
        urls = _md_links(parsed)
        assert len(urls) == len(set(urls)) == len(app.pages(source)), "each page once"
        assert all(u.startswith(f"{base}/{source}/") and u.endswith(".md") for u in urls)
    docusaurus = _md_links(parse_llms_txt(call(base, "/docusaurus/llms.txt").text))
    assert not [u for u in docusaurus if "/version-" in u or "/2.x/" in u or "/next/" in u], "one version"
    assert app.source("docusaurus").default_version == "3.8.1"
    # The notes are the pages' own descriptions from their front matter.
    notes = {n for links in parse_llms_txt(call(base, "/docusaurus/llms.txt").text).sections.values() for *_, n in links}
    assert len([n for n in notes if n]) >= 10


def test_every_link_of_llms_txt_serves_that_pages_markdown(sites):
    app, base = sites
    parsed = parse_llms_txt(call(base, "/marten/llms.txt").text)
    links = [(title, url) for ls in parsed.sections.values() for title, url, _ in ls]
    for title, url in links[:: max(1, len(links) // 12)]:
        page = call(base, urllib.parse.urlsplit(url).path)
        assert page.status == 200 and page.headers["Content-Type"].startswith("text/markdown"), url
        assert page.text.startswith("# ") and "\nSource: https://" in page.text
    missing = call(base, "/marten/no/such/page.md")
    assert missing.status == 404 and "llms.txt lists them" in missing.body["error"]["message"]


def test_llms_full_txt_holds_every_pages_cleaned_text(sites):
    app, base = sites
    for source, host in (("marten", "https://martendb.io/"), ("docusaurus", "https://docusaurus.io/")):
        full = call(base, f"/{source}/llms-full.txt").text
        assert full.startswith(f"# {source}\n\n> ") and "Capped" not in full
        assert full.count(f"\nSource: {host}") == len([p for p in app.pages(source)])
        assert "<!-- snippet:" not in full and "<<< @" not in full  # as published: markers gone, snippets read in


def test_a_slow_reader_of_llms_full_txt_holds_no_database_connection(sites, admin_dsn: str):
    """llms-full.txt is read a batch of pages at a time, each on a connection given back before the
    pages are sent: a client reading it slowly (or never) ties up no connection of the pool."""
    import psycopg

    app, _ = sites
    pages = app.page_texts("marten", batch=20)
    first = next(pages)  # the client has read the start and waits
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        held = admin.execute(  # a cursor kept open between reads is a transaction left open
            "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' AND datname = %s",
            [conninfo_to_dict(app.settings.database_url)["dbname"]]).fetchone()[0]
    assert held == 0
    rest = list(pages)  # 143 pages, in batches: each page once, in list_pages' order
    assert [p.path for p in [first, *rest]] == [p.path for p in app.pages("marten")]


def test_the_root_llms_txt_links_each_source(sites):
    _, base = sites
    parsed = parse_llms_txt(call(base, "/llms.txt").text)
    assert set(parsed.sections) == {"docusaurus", "marten"}
    assert f"{base}/marten/llms.txt" in _md_links(parsed) + [u for ls in parsed.sections.values() for _, u, _ in ls]


def test_a_scoped_key_reads_only_its_own_llms_txt(sites):
    app, base = sites
    key = app.create_key("llms-marten", sources=["marten"])
    try:
        assert call(base, "/llms.txt").status == 401  # a read key exists: reads need one
        root = parse_llms_txt(call(base, "/llms.txt", key=key).text)
        assert set(root.sections) == {"marten"}
        for path in ("/docusaurus/llms.txt", "/docusaurus/llms-full.txt", "/docusaurus/index.md"):
            hidden = call(base, path, key=key)
            assert hidden.status == 404 and "no source named 'docusaurus'" in hidden.body["error"]["message"]
    finally:
        app.revoke_key("llms-marten")


def test_export_writes_the_same_files_for_a_static_site(sites, tmp_path: Path):
    app, _ = sites
    env = {"PGCITE_DATABASE_URL": app.settings.database_url, "PGCITE_HOME": str(tmp_path / "home"),
           "PGCITE_LLMS_FULL_MAX_BYTES": str(CAP), "PATH": "/usr/bin:/bin"}
    for source, host in (("marten", "https://martendb.io/"), ("docusaurus", "https://docusaurus.io/")):
        out = tmp_path / source
        done = subprocess.run([sys.executable, "-m", "pgcite", "export", "llms-txt", source, str(out), "--json"],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["pages"] == len(app.pages(source))
        for url in _md_links(parse_llms_txt((out / "llms.txt").read_text())):  # at the site's base URL
            assert url.startswith(host) and (out / url.removeprefix(host)).is_file(), url
        full = (out / "llms-full.txt").read_text()
        assert len(full.encode()) <= CAP + 300  # and the note that says what was left out
        assert summary["left_out"] > 0 and f"Capped at 400,000 bytes: {summary['left_out']} more pages" in full
