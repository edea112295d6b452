"""The `pgcite` command as a user runs it: a real process, the real embedded database, the real model."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import corpus
from tests.fake_openai import closed_port

REPO = Path(__file__).resolve().parents[1]


def pgcite(*args: str, env: dict[str, str], timeout: int = 900, memory: int | None = None
           ) -> subprocess.CompletedProcess:
    """`pgcite ARGS`; `memory`: the most bytes of address space the process may hold (RLIMIT_AS)."""

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "pgcite", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, preexec_fn=capped if memory else None)


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))


def _json_search(question: str, env: dict[str, str], *extra: str) -> list[dict]:
    done = pgcite("search", question, "--json", *extra, env=env)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["query"] == question
    return payload["results"]


def test_ingest_own_docs_then_search_status_and_sources(env: dict[str, str]):
    done = pgcite("ingest", "docs", "--source", "pgcite", "--base-url", "https://pgcite.dev/", env=env)
    assert done.returncode == 0, done.stderr
    assert "pgcite:" in done.stdout and "0 skipped files" in done.stdout and "chunks embedded" in done.stdout
    assert "Traceback" not in done.stderr
    again = pgcite("ingest", "docs", "--source", "pgcite", "--base-url", "https://pgcite.dev/", "--json", env=env)
    report = json.loads(again.stdout)
    assert report["unchanged"] == report["files_read"] > 10 and report["chunks_embedded"] == 0, report
    assert report["skipped"] == [] and report["source"] == "pgcite" and report["seconds"] > 0

    results = _json_search("How do I point pgcite at my own PostgreSQL server?", env, "-k", "3")
    assert len(results) == 3
    assert set(results[0]) >= {"id", "source", "path", "url", "title", "heading", "content", "distance", "score"}
    assert results[0]["path"] == "production.md", [(r["path"], r["heading"]) for r in results]
    assert "PGCITE_DATABASE_URL" in results[0]["content"]
    assert results[0]["url"].startswith("https://pgcite.dev/production.md")
    assert [r["rank_score"] for r in results] == sorted((r["rank_score"] for r in results), reverse=True)

    human = pgcite("search", "How do I stop the embedded server?", "-k", "2", env=env)
    assert human.returncode == 0 and "1. " in human.stdout and "pgcite stop" in human.stdout

    status = pgcite("status", env=env)
    assert status.returncode == 0
    assert "all-MiniLM-L6-v2 (384 dims)" in status.stdout and "vector index built" in status.stdout
    facts = json.loads(pgcite("status", "--json", env=env).stdout)
    assert facts["model"] == {"name": "all-MiniLM-L6-v2", "dimension": 384} and facts["vector_index"]
    assert facts["sources"][0]["name"] == "pgcite" and facts["chunks"] > 100 and facts["answer_log"] is True

    listed = pgcite("sources", env=env)
    assert "pgcite" in listed.stdout and "links https://pgcite.dev/" in listed.stdout
    assert pgcite("sources", "remove", "pgcite", env=env).returncode == 0
    assert "No sources yet" in pgcite("sources", env=env).stdout
    gone = pgcite("sources", "remove", "pgcite", env=env)
    assert gone.returncode == 2 and "no source named 'pgcite'" in gone.stderr


def test_ask_own_docs_offline_with_citations_and_refuses_off_topic(env: dict[str, str]):
    assert pgcite("ingest", "docs", "--source", "pgcite", "--base-url", "https://pgcite.dev/", env=env).returncode == 0
    done = pgcite("ask", "How do I stop the embedded PostgreSQL server?", "--json", env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["generator"] == "extractive" and not answer["refused"]
    assert "pgcite stop" in answer["answer"]
    numbers = [s["number"] for s in answer["sources"]]
    assert answer["citations"] and set(answer["citations"]) <= set(numbers)
    assert answer["checks"]["invalid_citations"] == [] and answer["checks"]["foreign_links"] == []
    cited = [s for s in answer["sources"] if s["number"] in answer["citations"]]
    assert any("pgcite stop" in s["content"] for s in cited)
    assert set(answer) >= {"answer", "refused", "generator", "citations", "sources", "dropped", "checks", "usage"}

    human = pgcite("ask", "How do I stop the embedded PostgreSQL server?", env=env)
    assert human.returncode == 0 and "Sources" in human.stdout and "answered by extractive" in human.stdout
    assert "[1]" in human.stdout
    # Sources: each cited section once, in the order the answer first cites them; no line about the
    # sections left out when the checks passed.
    listed = [line for line in human.stdout.split("Sources", 1)[1].splitlines() if line.startswith("[")]
    labels = [line.split("]  ")[0].rsplit("] ", 1)[-1] for line in listed]
    first_cited = re.search(r"\[(\d+)\]", human.stdout).group(1)
    assert listed and len(labels) == len(set(labels)) and listed[0].startswith(f"[{first_cited}]")
    assert "checks passed" not in human.stdout or "more sections" not in human.stdout

    cat = pgcite("ask", "Am I a cat?", "--json", env=env)
    refused = json.loads(cat.stdout)
    assert refused["refused"] and refused["answer"] == "Not in the documents."

    # the demo question: the answer leads with the setting, not with the question quoted back
    demo = json.loads(pgcite("ask", "How do I point pgcite at my own PostgreSQL server?", "--json", env=env).stdout)
    assert "PGCITE_DATABASE_URL" in demo["answer"].split("\n\n")[0], demo["answer"]
    assert 'pgcite ask "How do I point' not in demo["answer"]

    helm = pgcite("ask", "Is there a Helm chart to deploy pgcite on Kubernetes?", env=env)
    assert helm.returncode == 0 and helm.stdout.startswith("Not in the documents.")
    assert "the question names 'Helm', 'Kubernetes', which no document uses" in helm.stdout
    assert "Closest matches" in helm.stdout and "https://pgcite.dev/" in helm.stdout


def test_zip_source_and_source_filter(env: dict[str, str], tmp_path: Path):
    archive = tmp_path / "handbook.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("leave.md", "# Leave\n\n## Holidays\n\nEveryone gets 30 days of paid holiday a year.\n")
        zf.writestr("../escape.md", "# Evil\n\nWritten outside.\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a.md").write_text("# Other\n\n## Holidays\n\nHolidays are decided by the board.\n")
    done = pgcite("ingest", str(archive), env=env)
    assert done.returncode == 0, done.stderr
    assert "handbook: 1 new" in done.stdout
    assert "skipped" in done.stderr and "../escape.md" in done.stderr
    assert pgcite("ingest", str(tmp_path / "other"), env=env).returncode == 0
    only = _json_search("how many days of holiday?", env, "--source", "handbook")
    assert only and {r["source"] for r in only} == {"handbook"}
    both = _json_search("how many days of holiday?", env)
    assert {r["source"] for r in both} == {"handbook", "other"}
    # A typo in --source: one line naming the sources there are, a usage error's exit, nothing logged.
    logged = pgcite("log", "--json", env=env).stdout
    for command in ("ask", "search"):
        typo = pgcite(command, "how many days of holiday?", "--source", "handbok", env=env)
        assert typo.returncode == 2 and "Traceback" not in typo.stderr, typo.stderr
        assert typo.stderr.strip() == "error: no source named 'handbok': the sources are handbook, other"
    assert pgcite("log", "--json", env=env).stdout == logged


def test_errors_are_one_line_without_traceback(env: dict[str, str], tmp_path: Path):
    bad_db = dict(env, PGCITE_DATABASE_URL=f"postgresql://u:p@127.0.0.1:{closed_port()}/db")
    failed = pgcite("status", env=bad_db)
    assert failed.returncode == 1
    assert failed.stderr.startswith("error: cannot connect to PostgreSQL") and "Traceback" not in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1

    missing = pgcite("ingest", str(tmp_path / "nope"), env=env)
    assert missing.returncode == 1 and missing.stderr.startswith("error:") and "Traceback" not in missing.stderr

    empty = pgcite("search", "   ", env=env)
    assert empty.returncode == 1 and "empty" in empty.stderr

    bad_setting = pgcite("status", env=dict(env, PGCITE_EMBEDDING_BATCH_SIZE="many"))
    assert bad_setting.returncode == 1 and "PGCITE_EMBEDDING_BATCH_SIZE" in bad_setting.stderr


def test_serve_checks_its_port_before_loading_the_model(env: dict[str, str]):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = pgcite("serve", "--port", str(port), env=env, timeout=60)
    assert busy.returncode == 1 and "Traceback" not in busy.stderr and "loading" not in busy.stderr, busy.stderr
    assert busy.stderr.strip() == f"error: port {port} on 127.0.0.1 is already in use (another pgcite serve?); " \
        "stop it or choose another with --port"
    for bad in ("70000", "0"):
        invalid = pgcite("serve", "--port", bad, env=env, timeout=60)
        assert invalid.returncode == 2 and "Traceback" not in invalid.stderr and "--port" in invalid.stderr
    nowhere = pgcite("serve", "--host", "no-such-host.invalid", env=env, timeout=60)
    assert nowhere.returncode == 1 and nowhere.stderr.startswith("error: cannot listen on 'no-such-host.invalid'")


@pytest.mark.slow
def test_marten_corpus_acceptance(env: dict[str, str], tmp_path: Path):
    """The issue's acceptance run: every Marten page ingests, the pgvector question finds the
    pgvector page, a re-run embeds nothing, an edited section re-embeds only its chunks."""
    import shutil

    marten = tmp_path / "marten"
    shutil.copytree(corpus("marten-docs"), marten)
    # The shared copy has no .vitepress folder, so the generator is named.
    args = ("ingest", str(marten), "--source", "marten", "--base-url", "https://martendb.io/", "--site", "vitepress")
    first = pgcite(*args, env=env)
    assert first.returncode == 0, first.stderr
    files = len([p for p in marten.rglob("*.md") if ".vitepress" not in p.parts])
    assert f"marten: {files} new, 0 changed, 0 unchanged, 0 removed, 0 skipped files" in first.stdout

    results = _json_search("how do I enable pgvector in Marten?", env, "-k", "3")
    assert [r["path"] for r in results[:2]] == ["documents/pgvector.md"] * 2
    assert results[0]["url"].startswith("https://martendb.io/documents/pgvector.html")

    again = pgcite(*args, env=env)
    assert f"0 new, 0 changed, {files} unchanged, 0 removed" in again.stdout
    assert "0 chunks embedded" in again.stdout

    page = marten / "documents" / "pgvector.md"
    text = page.read_text()
    assert "## Installation" in text
    page.write_text(text.replace("## Installation\n", "## Installation\n\nFirst, read this note.\n", 1))
    edited = pgcite(*args, env=env)
    assert "0 new, 1 changed" in edited.stdout and " 1 chunks embedded" in edited.stdout, edited.stdout


def test_a_folder_without_pages_exits_non_zero_with_one_line(env: dict[str, str], tmp_path: Path):
    empty = tmp_path / "site"
    (empty / "img").mkdir(parents=True)
    (empty / "img" / "logo.png").write_bytes(b"\x89PNG")
    done = pgcite("ingest", str(empty), env=env)
    assert done.returncode == 1
    assert done.stderr.startswith("error: no pages in ") and "(1 other files)" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    bad = pgcite("ingest", str(empty), "--site", "jekyll", env=env)
    assert bad.returncode == 2 and "unknown site generator 'jekyll'" in bad.stderr


def test_progress_without_a_terminal_is_a_line_every_few_seconds(monkeypatch: pytest.MonkeyPatch):
    import io

    from rich.console import Console

    from pgcite.cli import ingest as cli
    from pgcite.ingest.report import IngestReport

    log = io.StringIO()
    monkeypatch.setattr(cli, "err", Console(file=log, force_terminal=False, width=200))
    now = [100.0]
    monkeypatch.setattr(cli._Progress, "_now", staticmethod(lambda: now[0]))
    report = IngestReport(source="docs", scanned=3, chunks_embedded=40)
    monkeypatch.setattr(cli._Progress, "STARTING_AFTER", 0.05)
    with cli._Progress("docs") as progress:
        time.sleep(0.5)  # the model loading: nothing read yet
        for step in range(12):  # a file a second for twelve seconds, read before any is written
            now[0] += 1.0
            report.scanned += 1
            progress(f"page{step}.md", report)
    lines = log.getvalue().splitlines()
    assert lines == ["ingesting docs: reading the files and loading the embedding model",  # after a moment
                     "ingesting docs: 8 files read, 40 chunks embedded, 0 reused (5 s)",
                     "ingesting docs: 13 files read, 40 chunks embedded, 0 reused (10 s)"]


def test_sources_lists_the_site_and_its_versions(env: dict[str, str]):
    site = REPO / "tests" / "sites" / "docusaurus" / "website"
    done = pgcite("ingest", str(site), "--source", "gadgets", "--base-url", "https://g.dev/", env=env)
    assert done.returncode == 0, done.stderr
    assert "docusaurus site, versions 2.0, 1.0, next (default 2.0)" in done.stdout
    listed = pgcite("sources", env=env)
    assert "gadgets  docusaurus, 8 documents" in listed.stdout
    assert "versions 1.0, 2.0, next (default 2.0)" in listed.stdout
    older = _json_search("Which Node.js version do gadgets need?", env, "--version", "1.0", "-k", "1")
    assert older[0]["path"] == "versioned_docs/version-1.0/intro.md"


def _in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """What `pgcite ARGS` prints to a terminal (a pseudo-terminal), escape codes and all."""
    import pty

    main, child = pty.openpty()
    done = subprocess.Popen([sys.executable, "-m", "pgcite", *args], env={**env, "COLUMNS": "200"}, cwd=REPO,
                            stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert done.wait(300) == 0, seen.decode(errors="replace")
    return seen.decode(errors="replace").replace("\r\n", "\n")


def test_a_terminal_sees_the_answer_as_written_then_as_checked(env: dict[str, str], tmp_path: Path):
    """A model's answer without citations streams as written; the checked one, with the citations pgcite
    added, follows in a terminal, and is all a pipe gets."""
    from tests.fake_openai import FakeOpenAI, Reply
    from tests.test_ask import DOCS

    folder = tmp_path / "widgets"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    assert pgcite("ingest", str(folder), "--source", "widgets", env=env).returncode == 0
    question, said = "What is the default spin rate?", "The default is 40 turns per second."
    with FakeOpenAI() as fake:
        chat = {**env, "PGCITE_CHAT_URL": fake.url, "PGCITE_CHAT_MODEL": fake.chat_model, "PGCITE_CHAT_RETRIES": "0",
                "PGCITE_CHAT_VERIFY": "false"}
        fake.script(Reply(said, split=3), Reply(said, split=3))
        shown = _in_a_terminal(["ask", question], chat)
        piped = pgcite("ask", question, env=chat)
    assert piped.returncode == 0, piped.stderr
    cited = re.match(r"The default is 40 turns per second \[\d\]\.\n", piped.stdout)  # the checked answer first
    assert cited and "As checked" not in piped.stdout
    draft, _, checked = shown.partition("As checked, with the citations pgcite added:")
    assert said in draft and cited[0] in checked and "Sources" in checked


def test_help_shows_no_type_tag_on_a_flag():
    """A flag takes no value, so its help row says none (Typer 0.29 tags every flag `<bool>`); an
    option that takes a value keeps its type."""
    shown = subprocess.run([sys.executable, "-m", "pgcite", "ask", "--help"], capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": "120"}, check=True).stdout
    rows = {line.split()[1]: line for line in shown.splitlines() if line.startswith("│ --")}
    assert "<bool>" not in shown, shown
    assert "<str>" in rows["--source"] and "<int>" in rows["--context"]
    assert {"--json", "--help", "--include-flagged"} <= rows.keys()
