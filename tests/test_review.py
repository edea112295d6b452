"""`pgcite review BASE HEAD` on a fixture repository with real commits, a real database and the
bundled model: a heading renamed, a paragraph deleted, a page added, and a change of no meaning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.evaluation.questions import load_questions
from pgcite.evaluation.review import checkout, logged_questions, review
from pgcite.learn.log import Origin
from pgcite.vocabulary import SearchFilter
from pgcite.evaluation.review_report import to_markdown
from tests.conftest import _drop_database, _fresh_database

BASE = {
    "docs/keys.md": "# API keys\n\n## Rotating keys\n\nRotate the API keys with `acme keys rotate` every 90 days; "
    "the old key keeps working for one hour.\n",
    "docs/backups.md": "# Backups\n\n## Nightly backups\n\nBack up the database every night with `pg_dump` and keep "
    "the dumps for thirty days.\n\n## Restoring\n\nRestore a dump with `pg_restore` into an empty database.\n",
    "docs/deploy.md": "# Deploying\n\n## Docker\n\nRun the image with `docker run -p 8000:8000 acme/app` on any "
    "host with Docker installed.\n\n## Keys\n\nGive it a key: see [rotating keys](keys.md#rotating-keys) and "
    "[backups](backups.md).\n",
}
QUESTIONS = [
    {"id": "rotate", "question": "How do I rotate the API keys?", "answer_fact": "acme keys rotate"},
    {"id": "backup", "question": "How long are the nightly dumps kept?", "answer_fact": "thirty days"},
    {"id": "upgrade", "question": "How do I upgrade the cluster without downtime using a rolling restart?",
     "answer_fact": "rolling restart"},
    {"id": "docker", "question": "How do I run the image with Docker?", "answer_fact": "docker run"},
]


def _commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for path, text in files.items():
        if text is None:
            (repo / path).unlink()
        else:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("review") / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    commits = {"base": _commit(root, BASE, "base")}
    commits["renamed"] = _commit(
        root, {"docs/keys.md": BASE["docs/keys.md"].replace("## Rotating keys", "## Key rotation")}, "rename"
    )
    commits["deleted"] = _commit(
        root, {"docs/backups.md": "# Backups\n\n## Restoring\n\nRestore a dump with `pg_restore` into an empty "
               "database.\n"}, "delete a paragraph")
    commits["added"] = _commit(
        root, {"docs/upgrade.md": "# Upgrading\n\n## Without downtime\n\nUpgrade the cluster without downtime with a "
               "rolling restart: restart the pods one at a time.\n"}, "add a page")
    commits["reflowed"] = _commit(
        root, {"docs/upgrade.md": "# Upgrading\n\n## Without downtime\n\nUpgrade the cluster without downtime with a "
               "rolling restart: restart the pods one at a time.\n\n"}, "a blank line")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return root, commits


@pytest.fixture(scope="module")
def app(admin_dsn: str, embedder, tmp_path_factory):
    name = _fresh_database(admin_dsn)
    home = tmp_path_factory.mktemp("review-home")
    try:
        with Pgcite(Settings(home=home, database_url=make_conninfo(admin_dsn, dbname=name)), embedder=embedder) as app:
            yield app
    finally:
        _drop_database(admin_dsn, name)


def _review(app, repo, before: str, after: str, cited_urls=()):
    root, commits = repo
    with checkout(str(root / "docs"), [commits[before], commits[after]]) as (old, new):
        assert "keys.md" in os.listdir(old) and not old.startswith(str(root)), "extracted, not the checkout"
        result = review(
            app, old, new, load_questions(root / "questions.jsonl"), options={"base_url": "https://acme.dev/"},
            cited_urls=cited_urls,
        )
    assert not [s for s in app.sources() if s.name.startswith("review-")], "the throw-away sources are removed"
    return {c.id: c for c in result.changes}, result


def test_a_renamed_heading_moves_the_citation_to_its_new_anchor(app, repo):
    changes, _ = _review(app, repo, "base", "renamed")
    assert set(changes) == {"rotate"} and changes["rotate"].kinds == ("moved",)
    before, after = changes["rotate"].base.cited, changes["rotate"].head.cited
    assert [c.url for c in before] == ["https://acme.dev/keys.md#rotating-keys"]
    assert [c.url for c in after] == ["https://acme.dev/keys.md#key-rotation"]
    # The link to the old anchor is broken, and so is the URL answers cited; an answer elsewhere is not.
    _, result = _review(app, repo, "base", "renamed", cited_urls=[
        "https://acme.dev/keys.md#rotating-keys", "https://acme.dev/deploy.md#docker"])
    assert [(b.path, b.target, b.why) for b in result.broken_links] == [
        ("deploy.md", "keys.md#rotating-keys", "no anchor #rotating-keys on keys.md")]
    assert result.lost_urls == [("https://acme.dev/keys.md#rotating-keys", "no anchor #rotating-keys")]
    assert result.counts["broken-anchor"] == 1 and result.counts["broken-link"] == 0
    assert result.failed(["broken-anchor", "lost-url", "refused"]) == ["broken-anchor", "lost-url"]
    report = to_markdown(result)
    assert "1 links between pages now lead to no section" in report and "`keys.md#rotating-keys`" in report


def test_a_deleted_paragraph_is_an_answer_refused_and_its_fact_lost(app, repo):
    changes, result = _review(app, repo, "renamed", "deleted")
    assert set(changes) == {"backup"}
    assert changes["backup"].kinds == ("refused", "lost-fact")
    assert changes["backup"].base.fact is True and changes["backup"].head.refused
    assert result.failed(["refused", "answered"]) == ["refused"]
    report = to_markdown(result)
    assert report.startswith("## pgcite review:") and "1 answered before, refused now" in report
    assert "[Backups > Nightly backups](https://acme.dev/backups.md#nightly-backups)" in report


def test_a_page_added_answers_a_question_refused_before(app, repo):
    changes, result = _review(app, repo, "deleted", "added")
    assert set(changes) == {"upgrade"} and changes["upgrade"].kinds == ("answered", "gained-fact")
    assert result.failed(["refused", "lost-fact"]) == []


def test_a_change_of_no_meaning_is_an_empty_report(app, repo):
    changes, result = _review(app, repo, "added", "reflowed")
    assert changes == {} and result.questions == 4
    assert result.broken_links == [], "a link broken before the change is not the change's"
    assert "no answer changed" in to_markdown(result)


def test_the_command_reviews_two_revisions_without_touching_the_checkout(repo, database_url, tmp_path):
    root, commits = repo
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True).stdout
    env = {**os.environ, "PGCITE_DATABASE_URL": database_url, "PGCITE_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "pgcite", "review", commits["renamed"], commits["deleted"], "--git",
               str(root / "docs"), "--questions", str(root / "questions.jsonl"), "--base-url", "https://acme.dev/"]
    done = subprocess.run([*command, "--json", "--fail-on", "refused"], env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    body = json.loads(done.stdout)
    assert body["questions"] == 4 and body["counts"]["refused"] == 1 and body["counts"]["answered"] == 0
    assert "--fail-on names: refused" in done.stderr
    done = subprocess.run([*command, "--fail-on", "answered"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "### 1 answered before, refused now" in done.stdout
    assert subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == status, "the user's checkout is untouched"
    bad = subprocess.run([sys.executable, "-m", "pgcite", "review", "a", "b", "--git", str(tmp_path)], env=env,
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "not inside a git repository" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_questions_people_asked_are_replayed_and_their_cited_urls_checked(app, repo):
    root, commits = repo
    with checkout(str(root / "docs"), [commits["base"]]) as (docs,):
        app.ingest(docs, source="acme", base_url="https://acme.dev/")
        for _ in range(2):
            app.ask("How do I rotate the API keys?", filters=SearchFilter(source="acme"), origin=Origin("cli"))
        app.ask("What does the enterprise plan cost?", filters=SearchFilter(source="acme"), origin=Origin("cli"))
    questions, urls = logged_questions(app, "acme", None, top=1)
    assert [q.question for q in questions] == ["How do I rotate the API keys?"]  # the most asked
    assert urls == ["https://acme.dev/keys.md#rotating-keys"]
    with checkout(str(root / "docs"), [commits["base"], commits["renamed"]]) as (old, new):
        result = review(app, old, new, questions, options={"base_url": "https://acme.dev/"}, cited_urls=urls)
    assert [c.kinds for c in result.changes] == [("moved",)]
    assert result.lost_urls == [("https://acme.dev/keys.md#rotating-keys", "no anchor #rotating-keys")]


def test_nothing_to_ask_is_a_clear_error(app, tmp_path):
    with pytest.raises(PgciteError, match="no questions to replay"):
        review(app, str(tmp_path), str(tmp_path), [])


def test_a_docs_folder_inside_a_site_is_reviewed_with_the_site_around_it(app, tmp_path):
    """mkdocs.yml and the snippet a page includes lie above `docs/`: the checkout brings them, so the
    review routes and includes as an ingest of the checked-out folder does."""
    root = tmp_path / "site"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    base = _commit(root, {
        "mkdocs.yml": "site_name: Acme\nsite_url: https://acme.dev/\nmarkdown_extensions:\n  - pymdownx.snippets\n",
        "snippets/limits.md": "The rate limit is 600 requests a minute for each API key.\n",
        "docs/limits.md": "# Limits\n\n## Rate limits\n\n--8<-- \"snippets/limits.md\"\n",
        "src/app.py": "print('not docs')\n",
    }, "base")
    head = _commit(root, {"snippets/limits.md": "The rate limit is 900 requests a minute for each API key.\n"}, "raise the limit")
    with checkout(str(root / "docs"), [base, head]) as (old, new):
        assert os.path.isfile(os.path.join(old, "limits.md")) and os.path.isfile(os.path.join(old, "..", "mkdocs.yml"))
        questions = load_questions(_write(tmp_path / "q.jsonl", {
            "id": "limit", "question": "What is the rate limit for each API key?", "answer_fact": "600 requests"}))
        result = review(app, old, new, questions)
    [change] = result.changes
    assert "lost-fact" in change.kinds
    assert change.base.cited and change.base.cited[0].url.startswith("https://acme.dev/limits/#")  # MkDocs' routing


def _write(path: Path, row: dict) -> str:
    path.write_text(json.dumps(row) + "\n")
    return str(path)
