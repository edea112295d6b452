"""The insights (learn/insights.py, GET /v1/insights, `pgcite insights`) over a log made by real asks on
two sources, through the API, the page, the chat endpoint, an agent (MCP's channel) and the command
line: every figure against counts written here, a scoped key seeing none of the other source's
questions, filters changing the figures, and bad filters refused in one line."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path

import openai
import pytest
from psycopg.conninfo import make_conninfo
from tests.conftest import _drop_database, _fresh_database
from tests.http_server import call, running, served
from tests.test_api import DOCS, GADGETS
from tests.test_languages import BASE as SITE_BASE
from tests.test_languages import write_site

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.learn.insights import span_of
from pgcite.learn.log import Origin
from pgcite.learn.repository import of_remote, repository
from pgcite.store import Store, log_rows
from pgcite.vocabulary import SearchFilter

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
SPIN = "What is the default spin rate?"
CHARGE = "How long does a gadget take to charge?"
PAIR_W = "How do I pair a widget with a phone?"
PAIR_G = "Can a gadget be paired with a phone?"

core, base = served({"w": (DOCS, "https://github.com/acme/widgets/blob/main/docs/"),
                     "g": (GADGETS, "https://gadgets.dev/")})


@pytest.fixture(scope="module")
def keys(core: Pgcite) -> dict[str, str]:
    return {"w": core.create_key("reader-w", sources=["w"]), "g": core.create_key("reader-g", sources=["g"]),
            "admin-w": core.create_key("admin-w", sources=["w"], admin=True),
            "admin-g": core.create_key("admin-g", sources=["g"], admin=True),
            "ops": core.create_key("ops", admin=True)}


@pytest.fixture(scope="module")
def asked(base: str, core: Pgcite, keys: dict) -> dict[str, str]:
    """Six questions, by channel and source; one marked down, one stale, one asked 8 days ago."""
    ids = {
        "api-spin": call(base, "/v1/ask", {"question": SPIN}, key=keys["w"]).body["id"],  # api, w
        "api-pair": call(base, "/v1/ask", {"question": PAIR_W}, key=keys["w"]).body["id"],  # api, w, refused
        "page-spin": call(base, "/v1/ask", {"question": SPIN, "source": "w"}, key=keys["w"],
                          headers={"X-Pgcite-Client": "page"}).body["id"],  # page, w
    }
    chat = openai.OpenAI(base_url=base + "/v1", api_key=keys["g"], max_retries=0)
    reply = chat.chat.completions.create(model="pgcite:g", messages=[{"role": "user", "content": CHARGE}])
    ids["chat-charge"] = reply.model_extra["pgcite"]["id"]  # chat, g
    ids["mcp-pair"] = core.ask(PAIR_G, filters=SearchFilter(source="g"), origin=Origin("mcp", "agent")).id  # refused
    ids["cli-spin"] = core.ask(SPIN, origin=Origin("cli")).id  # every source
    assert all(ids.values()) and len(set(ids.values())) == 6
    core.rate(ids["api-spin"], "down", comment="not what I asked")
    core.log_entries()  # flushed
    with Store.open(core.settings) as store:
        store.conn.execute("UPDATE answer_log SET stale_at = now() WHERE id = %s", (ids["page-spin"],))
        old = log_rows.one(store, ids["api-pair"])
        assert old is not None and old.refused
        earlier = type(old)(**{**old.__dict__, "id": "00000000-0000-4000-8000-000000000001",
                               "asked_at": datetime.now(UTC) - timedelta(days=8)})
        log_rows.insert(store, [earlier])  # the same need, the span before
    return ids


def insights(base: str, key: str, query: str = "") -> dict:
    reply = call(base, "/v1/insights?" + query, key=key)
    assert reply.status == 200, reply.text
    return reply.body


def test_every_figure_against_the_log(base: str, core: Pgcite, keys: dict, asked: dict):
    data = insights(base, keys["ops"], "since=7d")
    total = data["total"]
    assert (total["questions"], total["answers"], total["refused"], total["rated"], total["down"], total["stale"]) == (
        6, 6, 2, 1, 1, 1)
    assert total["refused_share"] == round(2 / 6, 4) and total["down_share"] == round(1 / 6, 4)
    rows = [e for e in core.log_entries(since=datetime.now(UTC) - timedelta(days=7), limit=None)]
    latencies = [e.latency_ms for e in rows]
    assert total["latency_ms"]["p50"] == round(float(statistics.median(latencies)), 1)
    assert min(latencies) <= total["latency_ms"]["p50"] <= total["latency_ms"]["p95"] <= max(latencies)
    assert {c: sum(b["channels"][c] for b in data["buckets"]) for c in data["channels"]} == {
        "api": 2, "page": 1, "chat": 1, "mcp": 1, "cli": 1}
    assert {s: sum(b["sources"][s] for b in data["buckets"]) for s in data["sources"]} == {"w": 3, "g": 2, "*": 1}
    assert data["sources"][0] == "w"  # most asked first
    # Day buckets, oldest first, every day of the span: the empty ones are zeros.
    assert data["span"]["unit"] == "day" and len(data["buckets"]) in (7, 8)
    assert sum(b["questions"] for b in data["buckets"]) == 6 and data["buckets"][-1]["questions"] == 6
    assert data["buckets"][0]["questions"] == 0 and data["buckets"][0]["refused_share"] is None
    pages = {(p["source"], p["path"]): p["answers"] for p in data["cited_pages"]}
    assert pages[("w", "tuning.md")] == 3 and pages[("g", "gadgets.md")] == 1 and len(pages) == 2
    assert data["cited_pages"][0]["title"] == "Tuning" and data["cited_pages"][0]["path"] == "tuning.md"
    assert data["ask_again"]["count"] == 1 and [e["id"] for e in data["ask_again"]["examples"]] == [asked["page-spin"]]
    assert data["languages"] == [] and data["span"]["language"] is None  # folders of Markdown: no language
    # The gaps: the refusals and the answer marked down, each with its trend against the 7 days before.
    gap_ids = {i for g in data["gaps"] for i in g["ids"]}
    assert gap_ids == {asked["api-pair"], asked["mcp-pair"], asked["api-spin"]}
    pair = next(g for g in data["gaps"] if asked["api-pair"] in g["ids"])
    assert pair["previous"] == 1 and pair["examples"][0] in (PAIR_W, PAIR_G)
    assert "00000000-0000-4000-8000-000000000001" not in gap_ids  # counted as the span before, not shown
    # A week's buckets over a long span.
    assert insights(base, keys["ops"], "since=200d&gaps=0")["span"]["unit"] == "week"


def test_a_scoped_key_sees_only_its_sources(base: str, keys: dict, asked: dict):
    mine = insights(base, keys["admin-w"], "since=7d")
    assert (mine["total"]["questions"], mine["total"]["refused"], mine["total"]["down"]) == (3, 1, 1)
    assert mine["sources"] == ["w"] and set(mine["channels"]) == {"api", "page"}
    assert [(p["source"], p["path"], p["answers"]) for p in mine["cited_pages"]] == [("w", "tuning.md", 2)]
    assert [e["id"] for e in mine["ask_again"]["examples"]] == [asked["page-spin"]]
    ids = {i for g in mine["gaps"] for i in g["ids"]}
    assert ids == {asked["api-pair"], asked["api-spin"]}
    assert all(h["source"] == "w" for g in mine["gaps"] for h in g["closest"])
    assert PAIR_G not in json.dumps(mine) and CHARGE not in json.dumps(mine)
    pair = next(g for g in mine["gaps"] if asked["api-pair"] in g["ids"])
    assert (pair["count"], pair["previous"], pair["trend"], pair["source"]) == (1, 1, "same", "w")
    link = urllib.parse.urlsplit(pair["task_url"])
    assert (link.netloc, link.path) == ("github.com", "/acme/widgets/issues/new")
    form = urllib.parse.parse_qs(link.query)
    assert form["title"] == [f"Docs: {PAIR_W}"] and PAIR_W in form["body"][0]

    theirs = insights(base, keys["admin-g"], "since=7d")
    assert (theirs["total"]["questions"], theirs["sources"], theirs["ask_again"]["count"]) == (2, ["g"], 0)
    assert {i for g in theirs["gaps"] for i in g["ids"]} == {asked["mcp-pair"]}
    assert theirs["gaps"][0]["task_url"] is None and theirs["gaps"][0]["trend"] == "new"  # no repository known
    assert SPIN not in json.dumps(theirs) and PAIR_W not in json.dumps(theirs)


def test_filters_change_the_figures(base: str, keys: dict, asked: dict):
    api = insights(base, keys["ops"], "since=7d&channel=api&gaps=0")
    assert (api["total"]["questions"], api["total"]["refused"], api["channels"], api["span"]["channel"]) == (
        2, 1, ["api"], "api")
    g = insights(base, keys["ops"], "since=7d&source=g")
    assert (g["total"]["questions"], g["sources"], g["ask_again"]["count"]) == (2, ["g"], 0)
    assert {i for gap in g["gaps"] for i in gap["ids"]} == {asked["mcp-pair"]}
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    assert insights(base, keys["ops"], "since=7d&until=" + (datetime.now(UTC) - timedelta(days=1))
                    .strftime("%Y-%m-%dT%H:%M"))["total"]["questions"] == 0
    assert insights(base, keys["ops"], f"since=30d&until={later}&gaps=0")["total"]["questions"] == 7  # the older one
    assert insights(base, keys["ops"], "since=7d&gaps=0")["gaps"] == []


@pytest.mark.parametrize("query, status, words", [
    ("since=last+week", 400, "7d"), ("channel=fax", 400, "unknown channel"), ("unit=month", 422, "unit"),
    ("since=1d&until=7d", 400, "before"), ("gaps=500", 422, "gaps"), ("source=nowhere", 404, "nowhere"),
    ("language=en%3B+drop", 400, "not a language tag"), ("language=" + "x" * 41, 422, "language")])
def test_bad_filters_are_one_line_errors(base: str, keys: dict, query: str, status: int, words: str):
    reply = call(base, "/v1/insights?" + query, key=keys["ops"])
    assert reply.status == status and words in reply.body["error"]["message"], reply.text
    assert "\n" not in reply.body["error"]["message"]


def test_who_may_read_the_insights(base: str, keys: dict):
    assert call(base, "/v1/insights", key=keys["w"]).status == 403  # the log's questions: an admin key
    assert call(base, "/v1/insights").status == 401
    assert call(base, "/v1/insights?source=g", key=keys["admin-w"]).status == 404  # not within its sources


def test_the_command(core: Pgcite, asked: dict, tmp_path: Path):
    env = dict(os.environ, PGCITE_DATABASE_URL=core.settings.database_url, PGCITE_HOME=str(tmp_path / "home"))

    def pgcite(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pgcite", "insights", *args], capture_output=True, text=True,
                              cwd=REPO, timeout=300, env=env)

    data = json.loads(pgcite("--since", "7d", "--json").stdout)
    assert data["total"]["questions"] == 6 and data["total"]["refused"] == 2
    only = json.loads(pgcite("--since", "7d", "--source", "w", "--channel", "page", "--gaps", "0", "--json").stdout)
    assert (only["total"]["questions"], only["channels"], only["gaps"]) == (1, ["page"], [])
    report = pgcite("--since", "7d", "--markdown").stdout
    assert report.startswith("# Insights from ") and "6 questions; 33.3% refused, 16.7% marked down" in report
    assert "## What the docs are missing" in report and "[File a docs task](https://github.com/acme/widgets/" in report
    table = pgcite("--since", "7d", "--gaps", "0")
    assert table.returncode == 0 and "Questions per day" in table.stdout and "Tuning" in table.stdout
    # Piped, a table keeps each cell whole on its line rather than wrapping it at 80 columns.
    gaps = pgcite("--since", "7d").stdout
    assert any(PAIR_W in line or PAIR_G in line for line in gaps.splitlines()), gaps
    bad = pgcite("--since", "soon")
    assert bad.returncode == 1 and bad.stderr.startswith("error: --since takes a span") and bad.stderr.count("\n") == 1
    assert pgcite("--channel", "fax").stderr.startswith("error: unknown channel 'fax'")
    bad = pgcite("--language", "en; drop")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: the language 'en; drop' is not a language tag; use one like en, fr or pt-br")
    english = json.loads(pgcite("--since", "7d", "--language", "EN", "--gaps", "0", "--json").stdout)
    assert (english["span"]["language"], english["total"]["questions"]) == ("en", 0)  # these pages have none
    assert pgcite("--json", "--markdown").returncode == 2


def test_repositories_and_their_links(tmp_path: Path):
    assert repository("https://acme.github.io/widgets/", "", None).url == "https://github.com/acme/widgets"
    assert repository("https://gitlab.com/g/sub/p/-/tree/main/docs", "", None).url == "https://gitlab.com/g/sub/p"
    assert repository("https://widgets.dev/", "", None) is None
    clone = tmp_path / "clone"
    (clone / ".git").mkdir(parents=True)
    (clone / "docs").mkdir()
    (clone / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://bot:ghp_secret@github.com/acme/docs.git\n')
    found = repository("", str(clone / "docs"), {"pull": True})
    assert found is not None and found.url == "https://github.com/acme/docs"  # the token is never kept
    assert repository("", str(clone / "docs"), {}) is None  # not a clone pgcite pulls: not guessed
    assert of_remote("git@gitlab.com:g/p.git").new_issue("T", "B") == (
        "https://gitlab.com/g/p/-/issues/new?issue%5Btitle%5D=T&issue%5Bdescription%5D=B")
    long = of_remote("git@github.com:a/b.git").new_issue("T", "x" * 20_000)
    assert len(long) <= 6000


def test_spans_are_checked():
    now = datetime(2026, 12, 1, tzinfo=UTC)
    span = span_of("7d", None, now=now)
    assert (span.since, span.until) == (now - timedelta(days=7), now)
    with pytest.raises(Exception, match="at most"):
        span_of("99999d", None, now=now)
    with pytest.raises(Exception, match="within this key"):
        span_of("7d", source="g", allowed=("w",), now=now)
    assert span_of("7d", language="PT_br", now=now).language == "pt-br"
    assert span_of("7d", language="", now=now).language is None
    with pytest.raises(Exception, match="not a language tag"):
        span_of("7d", language="<script>", now=now)


def test_the_cited_pages_the_writer_keeps_are_what_migration_22_fills_in(core: Pgcite, asked: dict):
    """The log writer keeps each answer's cited pages in columns of their own (log_rows.cited_pages);
    migration 22 fills them in for the rows written before, from the same sections."""
    from pgcite.store.schema import MIGRATIONS

    backfill = next(s for s in MIGRATIONS[21].split(";") if "UPDATE answer_log" in s)
    query = "SELECT id, cited_pages, cited_counts FROM answer_log ORDER BY id"
    with Store.open(core.settings) as store:
        written = {str(r[0]): dict(zip(r[1], r[2], strict=True)) for r in store.conn.execute(query).fetchall()}
        with store.conn.transaction(force_rollback=True):
            store.conn.execute("UPDATE answer_log SET cited_pages = '{}', cited_counts = '{}'")
            store.conn.execute(backfill)
            filled = {str(r[0]): dict(zip(r[1], r[2], strict=True)) for r in store.conn.execute(query).fetchall()}
    assert filled == written
    assert written[asked["api-spin"]] and all(n >= 1 for n in written[asked["api-spin"]].values())
    assert not written[asked["api-pair"]]  # refused: nothing cited
    assert all(page.startswith(("w:", "g:")) for pages in written.values() for page in pages)


SIDEBAR_EN = "How do I add links to the sidebar?"
THEMES_EN = "How do I change the colours of the site with custom CSS?"
SIDEBAR_FR = "Comment ajouter des liens à la barre latérale ?"


@pytest.fixture(scope="module")
def multilingual(admin_dsn: str, embedder, tmp_path_factory):
    """A Starlight site in English, French and Japanese (tests/test_languages.py) on a database of its
    own, asked twice in English and once in French (marked down), and an admin key."""
    root = tmp_path_factory.mktemp("insights-languages")
    name = _fresh_database(admin_dsn)
    settings = Settings(home=root / "home", database_url=make_conninfo(admin_dsn, dbname=name))
    try:
        with Pgcite(settings, embedder=embedder) as app:
            app.ingest(write_site(root / "site"), source="demo", base_url=SITE_BASE)
            app.warm_up()
            ids = {q: app.ask(q, origin=Origin("cli")).id for q in (SIDEBAR_EN, THEMES_EN, SIDEBAR_FR)}
            assert all(ids.values())
            app.rate(ids[SIDEBAR_FR], "down", comment="not what I asked")
            app.log_entries()  # flushed
            yield app, ids, app.create_key("ops", admin=True)
    finally:
        _drop_database(admin_dsn, name)


def test_the_writer_keeps_each_answers_language_as_migration_22_fills_it_in(multilingual):
    """The log writer keeps the language of the page of each answer's first section (log_rows.insert,
    looked up in documents); migration 22 fills it in the same way for the rows written before."""
    from pgcite.store.schema import MIGRATIONS

    app, ids, _ = multilingual
    backfill = next(s for s in MIGRATIONS[21].split(";") if "SET language" in s)
    query = "SELECT id, language FROM answer_log ORDER BY id"
    with Store.open(app.settings) as store:
        written = {str(i): language for i, language in store.conn.execute(query).fetchall()}
        pages = {
            str(i): language
            for i, language in store.conn.execute(
                """SELECT a.id, d.language FROM answer_log a JOIN documents d
                   ON d.source = a.retrieved -> 0 ->> 'source' AND d.path = a.retrieved -> 0 ->> 'path'"""
            ).fetchall()
        }
        with store.conn.transaction(force_rollback=True):
            store.conn.execute("UPDATE answer_log SET language = ''")
            store.conn.execute(backfill)
            filled = {str(i): language for i, language in store.conn.execute(query).fetchall()}
    assert written == {ids[SIDEBAR_EN]: "en", ids[THEMES_EN]: "en", ids[SIDEBAR_FR]: "fr"} == pages == filled


def test_the_language_filter_and_the_languages_asked_in(multilingual):
    app, ids, key = multilingual
    every = app.insights(span_of("1d"), gaps=0)
    assert (every.total.questions, every.languages) == (3, ["en", "fr"])  # most asked first
    with running(app) as base:
        french = insights(base, key, "since=1d&language=FR")
        assert (french["span"]["language"], french["languages"], french["total"]["questions"]) == ("fr", ["fr"], 1)
        assert (french["total"]["down"], french["sources"], french["channels"]) == (1, ["*"], ["cli"])
        assert french["cited_pages"] and all("/fr/" in p["url"] for p in french["cited_pages"])
        assert [i for g in french["gaps"] for i in g["ids"]] == [ids[SIDEBAR_FR]]  # the gaps are filtered too
        english = insights(base, key, "since=1d&language=en")
        assert (english["languages"], english["total"]["questions"], english["total"]["down"]) == (["en"], 2, 0)
        assert english["gaps"] == [] and SIDEBAR_FR not in json.dumps(english)
        assert sum(b["questions"] for b in english["buckets"]) == 2
        none = insights(base, key, "since=1d&language=ja")
        assert (none["languages"], none["total"]["questions"], none["gaps"]) == ([], 0, [])
        bad = call(base, "/v1/insights?language=fr%0Aen", key=key)
        assert bad.status == 400 and "not a language tag" in bad.body["error"]["message"]
        assert "\n" not in bad.body["error"]["message"]
    assert [e.id for e in app.log_entries(language="fr")] == [ids[SIDEBAR_FR]]
    assert {e.id for e in app.log_entries(language="en")} == {ids[SIDEBAR_EN], ids[THEMES_EN]}
