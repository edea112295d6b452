"""Languages as a dimension (docs/languages.md): a Starlight site with English at its root and
French and Japanese translations, on a real database with the bundled model. Each page keeps its
language; a search reads the question's language where the site has it, else the default, and
never mixes them; `--languages` keeps some; the CLI, HTTP API, chat and MCP all take a language."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.retrieval.languages import question_language
from pgcite.vocabulary import SearchFilter
from tests.conftest import _drop_database, _fresh_database
from tests.http_server import call, running

CONFIG = """import starlight from '@astrojs/starlight';
export default defineConfig({
  integrations: [
    starlight({
      title: 'Demo',
      defaultLocale: 'root',
      locales: {
        root: { label: 'English', lang: 'en' },
        fr: { label: 'Français', lang: 'fr' },
        ja: { label: '日本語', lang: 'ja' },
      },
    }),
  ],
});
"""

PAGES = {
    "guides/sidebar.md": "---\ntitle: Sidebar\n---\n\nAdd links to the sidebar with the `sidebar` option of the "
    "Starlight integration: each entry is a label and a link, and groups nest entries under a heading.\n",
    "guides/themes.md": "---\ntitle: Themes\n---\n\nChange the colours of the site with custom CSS: set the accent "
    "colour variables in a stylesheet listed under `customCss`.\n",
    "fr/guides/sidebar.md": "---\ntitle: Barre latérale\n---\n\nAjoutez des liens à la barre latérale avec "
    "l'option `sidebar` de l'intégration Starlight : chaque entrée est un libellé et un lien, et les groupes "
    "imbriquent des entrées sous un titre.\n",
    "fr/guides/themes.md": "---\ntitle: Thèmes\n---\n\nChangez les couleurs du site avec du CSS personnalisé : "
    "définissez les variables de couleur d'accent dans une feuille de style listée sous `customCss`.\n",
    "ja/guides/sidebar.md": "---\ntitle: サイドバー\n---\n\nStarlight インテグレーションの `sidebar` オプションで"
    "サイドバーにリンクを追加します。各項目はラベルとリンクで、グループは見出しの下に項目を入れ子にします。\n",
}
BASE = "https://docs.example.com/"


def write_site(root: Path) -> str:
    (root / "src/content/docs").mkdir(parents=True)
    (root / "astro.config.mjs").write_text(CONFIG)
    for path, text in PAGES.items():
        (root / "src/content/docs" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "src/content/docs" / path).write_text(text)
    return str(root)


@pytest.fixture(scope="module")
def app(admin_dsn: str, embedder, tmp_path_factory):
    root = tmp_path_factory.mktemp("languages")
    name = _fresh_database(admin_dsn)
    settings = Settings(home=root / "home", database_url=make_conninfo(admin_dsn, dbname=name))
    try:
        with Pgcite(settings, embedder=embedder) as app:
            report = app.ingest(write_site(root / "site"), source="demo", base_url=BASE)
            assert report.languages == ("en", "fr", "ja")
            app.warm_up()
            yield app
    finally:
        _drop_database(admin_dsn, name)


def _languages_of(hits) -> set[str]:
    return {"fr" if "/fr/" in h.url else "ja" if "/ja/" in h.url else "en" for h in hits}


def test_each_source_lists_its_languages_with_their_pages(app):
    info = app.source("demo")
    assert info.default_language == "en"
    assert info.languages == {"en": 2, "fr": 2, "ja": 1}


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("How do I add links to the sidebar?", "en"),
        ("Comment ajouter des liens à la barre latérale ?", "fr"),
        ("サイドバーにリンクを追加するには？", "ja"),
        # Not a language of the site: its default, never a mix.
        ("Wie füge ich der Seitenleiste Links hinzu?", "en"),
        # Too short to tell from English, and names only: the default.
        ("sidebar customCss", "en"),
    ],
)
def test_a_search_reads_the_questions_language_where_the_site_has_it(app, question, language):
    hits = app.search(question, k=5, filters=SearchFilter(source="demo"))
    assert hits and _languages_of(hits) == {language}


def test_a_named_language_wins_and_a_missing_one_finds_nothing(app):
    hits = app.search("How do I change the colours?", k=5, filters=SearchFilter(language="fr"))
    assert hits and _languages_of(hits) == {"fr"}
    assert app.search("How do I change the colours?", k=5, filters=SearchFilter(language="de")) == []
    assert app.why_nothing(SearchFilter(language="de")) == (
        "source 'demo' has no 'de' pages; it holds en, fr, ja"
    )
    assert app.why_nothing(SearchFilter(source="demo", version="2.x")) == (
        "source 'demo' has no version '2.x'; it has no versions"
    )
    assert "there is no source 'nope'" in app.why_nothing(SearchFilter(source="nope"))
    with pytest.raises(PgciteError, match="not a language tag"):
        app.search("sidebar", filters=SearchFilter(language="en; drop"))


def test_an_answer_never_mixes_languages(app):
    answer = app.ask("Comment ajouter des liens à la barre latérale ?", filters=SearchFilter(source="demo"))
    assert not answer.refused and answer.sources
    assert _languages_of([p.hit for p in answer.sources]) == {"fr"}
    assert all("/fr/" in p.hit.url for p in answer.sources)


def test_the_question_language_stays_the_default_on_english_questions():
    languages, defaults = ["en", "fr", "ja", "pt-br", "de"], ["en"]
    for question in (
        "import questions csv",
        "Does Marten use PostgreSQL prepared statements?",
        "self-hosted language model for generating answers?",
        "How do I rotate the API keys?",
    ):
        assert question_language(question, languages, defaults) == ""
    assert question_language("Como posso traduzir a minha documentação?", languages, defaults) == "pt-br"


def test_only_the_languages_kept_are_stored(admin_dsn, embedder, tmp_path):
    name = _fresh_database(admin_dsn)
    settings = Settings(home=tmp_path / "home", database_url=make_conninfo(admin_dsn, dbname=name))
    try:
        with Pgcite(settings, embedder=embedder) as app:
            site = write_site(tmp_path / "site")
            report = app.ingest(site, source="demo", base_url=BASE, languages=["en", "ja"])
            assert report.left_out == 2 and report.new == 3 and report.languages == ("en", "ja")
            assert app.source("demo").languages == {"en": 2, "ja": 1}
            # A sync keeps the choice; narrowing it again removes what is no longer kept.
            assert app.sync("demo").left_out == 2
            report = app.ingest(site, source="demo", base_url=BASE, languages=["en"])
            assert report.removed == 1 and app.source("demo").languages == {"en": 2}
            with pytest.raises(PgciteError, match="no 'de' pages; it publishes en, fr, ja"):
                app.ingest(site, source="demo", base_url=BASE, languages=["de"])
            # Without the site's default, the first language kept in the site's order is the default.
            app.ingest(site, source="demo", base_url=BASE, languages=["ja", "fr"])
            assert app.source("demo").default_language == "fr"
    finally:
        _drop_database(admin_dsn, name)


def test_the_api_chat_and_models_take_a_language(app):
    with running(app) as base:
        reply = call(base, "/v1/search?q=How+do+I+change+the+colours%3F&language=fr&k=3")
        assert reply.status == 200
        assert {h["url"].split("/")[3] for h in reply.body["results"]} == {"fr"}
        reply = call(base, "/v1/search?q=sidebar&language=%3Cscript%3E")
        assert reply.status == 400 and "language" in reply.body["error"]["message"]
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
        models = {m.id for m in client.models.list().data}
        assert {"pgcite:demo@en", "pgcite:demo@fr", "pgcite:demo@ja"} <= models
        french = "Comment ajouter des liens à la barre latérale ?"
        chat = client.chat.completions.create(model="pgcite:demo@fr", messages=[{"role": "user", "content": french}])
        urls = [a.url_citation.url for a in chat.choices[0].message.annotations or []]
        assert urls and all("/fr/" in url for url in urls)
        # The model's language wins over the question's: no German pages, so nothing to answer from.
        chat = client.chat.completions.create(model="pgcite:demo@de", messages=[{"role": "user", "content": french}])
        assert chat.choices[0].message.content.startswith("Not in the documents.")
        # /v1/ask: the sections a refusal came closest to are in the language asked for too.
        reply = call(base, "/v1/ask", {"question": "How do I change the colours?", "language": "fr"})
        assert reply.status == 200
        sections = reply.body["sources"] or reply.body["dropped"]
        assert sections and all("/fr/" in s["url"] for s in sections)
