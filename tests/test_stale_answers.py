"""A logged answer goes stale when a later ingest or sync changes or removes a section it cited:
real database, bundled model, the answer log as every channel writes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.learn.log import Origin, eval_rows
from pgcite.vocabulary import SearchFilter
from tests.conftest import _drop_database, _fresh_database
from tests.http_server import call, running

KEYS = "# API keys\n\n## Rotating keys\n\nRotate the API keys with `acme keys rotate` every 90 days.\n"
DEPLOY = "# Deploying\n\n## Docker\n\nRun the image with `docker run -p 8000:8000 acme/app` on any host.\n"


@pytest.fixture
def acme(admin_dsn: str, embedder, tmp_path: Path) -> Iterator[tuple[Pgcite, Path]]:
    """A Pgcite on a fresh database with the folder `acme` ingested; the folder, to change it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text(KEYS)
    (docs / "deploy.md").write_text(DEPLOY)
    name = _fresh_database(admin_dsn)
    settings = Settings(home=tmp_path / "home", database_url=make_conninfo(admin_dsn, dbname=name))
    try:
        with Pgcite(settings, embedder=embedder) as app:
            app.ingest(str(docs), source="acme", base_url="https://acme.dev/")
            yield app, docs
    finally:
        _drop_database(admin_dsn, name)


def test_a_sync_that_changes_a_cited_section_marks_the_answer_stale(acme):
    app, docs = acme
    only = SearchFilter(source="acme")
    keys = app.ask("How do I rotate the API keys?", filters=only, origin=Origin("cli"))
    deploy = app.ask("How do I run the image with Docker?", filters=only, origin=Origin("cli"))
    refused = app.ask("What does the enterprise plan cost per seat?", filters=only, origin=Origin("cli"))
    assert not keys.refused and not deploy.refused and refused.refused
    for answer in (keys, deploy):
        app.rate(answer.id, "up", None)
    assert app.sync("acme").stale_answers == 0  # nothing changed: nothing stale
    (docs / "keys.md").write_text(KEYS.replace("every 90 days", "every 30 days"))
    report = app.sync("acme")
    assert report.stale_answers == 1 and "1 logged answers cited sections that changed" in report.summary()
    stale = app.log_entries(stale=True)
    assert [e.id for e in stale] == [keys.id] and stale[0].stale_at is not None
    assert {e.id: e.stale_at for e in app.log_entries()}[deploy.id] is None
    # Export leaves the stale answer out: the sections it would name as gold have changed.
    assert [row["question"] for row in eval_rows(app.log_entries(limit=None)) if "gold" in row] == [
        "How do I run the image with Docker?"
    ]
    (docs / "deploy.md").unlink()  # a cited page removed
    assert app.sync("acme").stale_answers == 1
    assert app.sync("acme").stale_answers == 0  # marked once
    admin = app.create_key("ops", admin=True)
    with running(app) as base:
        reply = call(base, "/v1/log?stale=true", key=admin)
        assert reply.status == 200
        assert {a["id"] for a in reply.body["answers"]} == {keys.id, deploy.id}
        assert all(a["stale_at"] for a in reply.body["answers"])
