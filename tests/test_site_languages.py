"""Each page's language from its generator's layout and configuration (Starlight, Docusaurus,
VitePress, MkDocs), translations routed as the generator publishes them, and Docusaurus read from
any folder of the site with a default version that has pages. Small fixtures in
tests/sites/lang-*/ (or written to tmp_path); the shared corpora where present. No database."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from pgcite.ingest.sites import join_url
from pgcite.ingest.sites.jsconfig import JsConfig
from tests.conftest import corpus
from tests.test_sites import SITES, read_site


def languages_of(folder: Path | str) -> tuple[tuple[str, ...], str, dict[str, str]]:
    """(site languages, default language, page path -> its language)."""
    site, pages = read_site(folder)
    return site.languages, site.default_language, {path: page.language for path, page in pages.items()}


def routes_of(folder: Path | str) -> dict[str, str]:
    return {path: page.route for path, page in read_site(folder)[1].items()}


def write(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "LICENSE").write_text("Fixture for pgcite's tests.\n")
    return root


PAGE = "# Page\n\nText.\n"

# --- reading a JavaScript configuration -------------------------------------------------------


def test_js_config_reads_literals_and_leaves_computed_values_unknown() -> None:
    config = JsConfig(
        "// i18n: { defaultLocale: 'xx' }\n"
        "const site = 'https://example.com/'; /* a // in a string is no comment */\n"
        "const defaultLocale = 'en';\n"
        "export const locales = { root: { label: 'English', lang: 'en' }, 'zh-cn': { lang: 'zh-CN' } };\n"
        "export default { site, lang: 'en-US', i18n: { defaultLocale, locales: isDev ? ['en'] : ['en', 'fr'] },\n"
        "  nested: { lang: 'de' }, list: [defaultLocale, 'fr'] };\n"
    )
    assert config.string(config.value("site")) == "https://example.com/"
    locales = config.entries(config.object("locales") or "")
    assert list(locales) == ["root", "zh-cn"]
    assert config.string(config.entries(locales["zh-cn"])["lang"]) == "zh-CN"
    i18n = config.entries(config.object("i18n") or "")
    assert config.string(i18n["defaultLocale"]) == "en"  # a shorthand resolved through its const
    assert config.strings(i18n["locales"]) is None  # a ternary is computed: unknown, not guessed
    assert config.strings(config.value("list")) == ["en", "fr"]
    assert config.string(config.top_level("lang")) == "en-US"  # not the nested `lang: 'de'`


# --- Starlight --------------------------------------------------------------------------------


def test_starlight_languages_are_the_configured_locales_with_the_root_as_default() -> None:
    languages, default, pages = languages_of(SITES / "lang-starlight")
    # the sidebar's `translations` (de, zh-CN) and a commented-out locale are not locales
    assert languages == ("en", "fr", "pt-br") and default == "en"
    assert pages == {
        "src/content/docs/index.md": "en",
        "src/content/docs/guides/setup.md": "en",
        "src/content/docs/fr/guides/setup.md": "fr",
        "src/content/docs/pt-br/index.md": "pt-br",  # lang: 'pt-BR', normalised
        "src/content/docs/es/spaces.md": "en",  # a folder no locale names is the root's
    }


def test_starlight_translations_keep_their_folder_in_the_route() -> None:
    routes = routes_of(SITES / "lang-starlight")
    assert routes["src/content/docs/fr/guides/setup.md"] == "fr/guides/setup/"
    assert routes["src/content/docs/pt-br/index.md"] == "pt-br/"
    assert routes["src/content/docs/guides/setup.md"] == "guides/setup/"


def test_starlight_default_locale_can_be_a_folder_of_its_own(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "astro.config.mjs": "export default { integrations: [starlight({ title: 'X', defaultLocale: 'en',\n"
        "  locales: { en: { label: 'English' }, 'zh-cn': { label: '简体中文', lang: 'zh-CN' },\n"
        "    ar: { label: 'العربية', dir: 'rtl' } } })] };\n",
        "src/content/docs/en/guide.md": PAGE,
        "src/content/docs/zh-cn/guide.md": PAGE,
        "src/content/docs/ar/guide.md": PAGE,
    })
    languages, default, pages = languages_of(root)
    assert languages == ("en", "zh-cn", "ar") and default == "en"  # ar: no lang, its folder's name
    assert pages["src/content/docs/ar/guide.md"] == "ar"
    assert routes_of(root)["src/content/docs/en/guide.md"] == "en/guide/"


def test_starlight_monolingual_root_locale_names_the_site_language(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "astro.config.mjs": "starlight({ locales: { root: { label: '简体中文', lang: 'zh-CN' } } })\n",
        "src/content/docs/index.md": PAGE,
    })
    assert languages_of(root)[:2] == (("zh-cn",), "zh-cn")


def test_starlight_without_locales_takes_folders_that_mirror_the_root_as_translations() -> None:
    languages, default, pages = languages_of(SITES / "lang-starlight-folders")
    assert languages == ("en", "fr") and default == "en"
    assert pages["src/content/docs/fr/guides/setup.md"] == "fr"
    assert pages["src/content/docs/id/format.md"] == "en"  # named like Indonesian, but mirrors no page


def test_starlight_without_locales_or_language_folders_names_no_language() -> None:
    languages, default, pages = languages_of(SITES / "starlight")
    assert languages == () and default == "" and set(pages.values()) == {""}


def test_starlight_language_folder_ingested_alone_is_that_language() -> None:
    site, pages = read_site(SITES / "lang-starlight" / "src" / "content" / "docs" / "fr")
    assert site.name == "starlight" and site.files.prefix == "src/content/docs/fr"
    assert site.languages == ("fr",) and site.default_language == "fr"
    assert pages["guides/setup.md"].route == "fr/guides/setup/"


# --- Docusaurus -------------------------------------------------------------------------------

DOCUSAURUS = SITES / "lang-docusaurus" / "website"
FR = "i18n/fr/docusaurus-plugin-content-docs"


def test_docusaurus_languages_are_the_default_locale_and_the_translated_locales() -> None:
    languages, default, pages = languages_of(DOCUSAURUS)
    assert languages == ("en", "fr", "pt-br") and default == "en"
    assert pages == {
        "docs/intro.md": "en",
        "versioned_docs/version-1.0/intro.md": "en",
        f"{FR}/current/intro.md": "fr",
        f"{FR}/version-1.0/intro.md": "fr",
        "i18n/pt-BR/docusaurus-plugin-content-docs/current/intro.md": "pt-br",
    }  # de is not in i18n.locales; the blog and the French partial are not docs pages


@pytest.mark.parametrize("path, route, version", [
    ("docs/intro.md", "docs/next/intro", "next"),
    ("versioned_docs/version-1.0/intro.md", "docs/intro", "1.0"),
    (f"{FR}/current/intro.md", "fr/docs/next/intro", "next"),  # a translation of docs/
    (f"{FR}/version-1.0/intro.md", "fr/docs/intro", "1.0"),  # of the newest release
    ("i18n/pt-BR/docusaurus-plugin-content-docs/current/intro.md", "pt-BR/docs/next/intro", "next"),  # as named
])
def test_docusaurus_translations_are_routed_under_their_locale(path: str, route: str, version: str) -> None:
    _, pages = read_site(DOCUSAURUS)
    assert (pages[path].route, pages[path].version) == (route, version)


def test_docusaurus_computed_locales_are_found_from_the_i18n_folders(tmp_path: Path) -> None:
    root = tmp_path / "website"
    shutil.copytree(DOCUSAURUS, root)
    shutil.copy(SITES / "lang-docusaurus" / "LICENSE", tmp_path / "LICENSE")
    (root / "docusaurus.config.js").write_text(
        "export default { i18n: { defaultLocale: 'en', locales: process.env.FAST ? ['en'] : ['en', 'fr'] } };\n")
    languages, default, pages = languages_of(root)
    assert languages == ("en", "de", "fr", "pt-br") and default == "en"
    assert pages["i18n/de/docusaurus-plugin-content-docs/current/intro.md"] == "de"


def test_docusaurus_without_i18n_names_no_language() -> None:
    languages, default, pages = languages_of(SITES / "docusaurus" / "website")
    assert languages == () and default == "" and set(pages.values()) == {""}


def test_docusaurus_docs_folder_alone_is_versioned_next_by_default() -> None:
    """`pgcite ingest website/docs` of a site with releases: its pages keep the /docs/next/ they
    are served at, and their version, `next`, is the default (the releases are not ingested)."""
    site, pages = read_site(DOCUSAURUS / "docs")
    assert site.versions == ("next",) and site.default_version == "next"
    assert {p.version for p in pages.values()} == {"next"}
    assert pages["intro.md"].route == "docs/next/intro"
    assert site.languages == ("en",) and site.default_language == "en"


def test_docusaurus_release_folder_alone_is_that_version() -> None:
    site, pages = read_site(DOCUSAURUS / "versioned_docs" / "version-1.0")
    assert site.versions == ("1.0",) and site.default_version == "1.0"
    assert pages["intro.md"].route == "docs/intro"


def test_docusaurus_translation_folder_is_found_from_inside_it() -> None:
    site, pages = read_site(DOCUSAURUS / FR / "current")
    assert site.name == "docusaurus" and site.files.prefix == f"{FR}/current"
    assert site.languages == ("fr",) and site.default_language == "fr"
    assert site.versions == ("next",) and site.default_version == "next"
    assert pages["intro.md"].route == "fr/docs/next/intro"


# --- VitePress --------------------------------------------------------------------------------


def test_vitepress_locales_name_folders_and_the_root_speaks_the_site_lang() -> None:
    languages, default, pages = languages_of(SITES / "lang-vitepress" / "docs")
    assert languages == ("en-us", "fr", "pt-br") and default == "en-us"  # root: the site's lang
    assert pages == {
        "index.md": "en-us", "guide/setup.md": "en-us", "api/index.md": "en-us",
        "fr/index.md": "fr", "fr/guide/setup.md": "fr",
        "pt-br/guide/setup.md": "pt-br",  # no lang: the locale's key
    }
    routes = routes_of(SITES / "lang-vitepress" / "docs")
    assert routes["fr/guide/setup.md"] == "fr/guide/setup.html" and routes["fr/index.md"] == "fr/"


def test_vitepress_config_folder_and_default_lang(tmp_path: Path) -> None:
    root = write(tmp_path, {
        ".vitepress/config/index.ts": "export default defineConfig({ locales: {\n"
        "  root: { label: 'English', ...en }, zh: { label: '简体中文', ...zh } } })\n",
        "index.md": PAGE, "zh/index.md": PAGE,
    })
    assert languages_of(root) == (("en-us", "zh"), "en-us", {"index.md": "en-us", "zh/index.md": "zh"})


def test_vitepress_without_locales_names_no_language() -> None:
    languages, default, pages = languages_of(SITES / "vitepress" / "docs")
    assert languages == () and default == "" and set(pages.values()) == {""}


def test_vitepress_language_folder_ingested_alone_is_that_language() -> None:
    site, pages = read_site(SITES / "lang-vitepress" / "docs" / "fr")
    assert site.languages == ("fr",) and site.default_language == "fr"
    assert pages["guide/setup.md"].route == "fr/guide/setup.html"


# --- MkDocs -----------------------------------------------------------------------------------


def test_mkdocs_static_i18n_folder_structure() -> None:
    languages, default, pages = languages_of(SITES / "lang-mkdocs-folder")
    assert languages == ("en", "fr") and default == "en"
    assert pages == {"docs/en/index.md": "en", "docs/en/guide/fulcrum.md": "en",
                     "docs/fr/index.md": "fr", "docs/fr/guide/fulcrum.md": "fr"}
    routes = routes_of(SITES / "lang-mkdocs-folder")
    assert routes["docs/en/guide/fulcrum.md"] == "guide/fulcrum/"  # the default at the root
    assert routes["docs/fr/guide/fulcrum.md"] == "fr/guide/fulcrum/"
    assert routes["docs/fr/index.md"] == "fr/"


def test_mkdocs_static_i18n_suffix_structure() -> None:
    languages, default, pages = languages_of(SITES / "lang-mkdocs-suffix")
    assert languages == ("en", "fr", "pt-br") and default == "en"
    assert pages["docs/guide/fulcrum.pt_BR.md"] == "pt-br" and pages["docs/guide/release-1.2.md"] == "en"
    routes = routes_of(SITES / "lang-mkdocs-suffix")
    assert routes["docs/guide/fulcrum.fr.md"] == "fr/guide/fulcrum/"
    assert routes["docs/guide/fulcrum.pt_BR.md"] == "pt_BR/guide/fulcrum/"  # the locale as written
    assert routes["docs/index.fr.md"] == "fr/" and routes["docs/guide/release-1.2.md"] == "guide/release-1.2/"


def test_mkdocs_theme_language_is_the_site_language(tmp_path: Path) -> None:
    config = "site_name: X\ntheme:\n  name: material\n  language: de\n"
    root = write(tmp_path, {"mkdocs.yml": config, "docs/index.md": PAGE})
    assert languages_of(root) == (("de",), "de", {"docs/index.md": "de"})
    assert languages_of(SITES / "mkdocs" / "site")[:2] == ((), "")  # no theme.language, no plugin


def test_mkdocs_static_i18n_older_configuration(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "mkdocs.yml": "site_name: X\nplugins:\n  - i18n:\n"
        "      default_language: en\n      languages:\n        fr: Français\n",
        "docs/index.md": PAGE, "docs/index.fr.md": PAGE,
    })
    assert languages_of(root) == (("en", "fr"), "en", {"docs/index.md": "en", "docs/index.fr.md": "fr"})


def test_mkdocs_language_folder_ingested_alone_is_that_language() -> None:
    site, pages = read_site(SITES / "lang-mkdocs-folder" / "docs" / "fr")
    assert site.languages == ("fr",) and site.default_language == "fr"
    assert pages["guide/fulcrum.md"].route == "fr/guide/fulcrum/"


# --- the shared corpora -----------------------------------------------------------------------

STARLIGHT_LOCALES = "da de es fa fr hi id it ja ko pt-br pt-pt ru tr uk zh-cn".split()


def test_starlight_corpus_every_page_in_its_folders_language() -> None:
    site, pages = read_site(corpus("starlight-docs") / "docs")
    assert site.default_language == "en" and len(site.languages) == 17 and site.languages[0] == "en"
    for path, page in pages.items():
        folder = path.split("/")[3]
        assert page.language == (folder if folder in STARLIGHT_LOCALES else "en"), path
    assert Counter(p.language for p in pages.values())["en"] == 37
    guide = pages["src/content/docs/fr/guides/i18n.mdx"]
    assert join_url("https://starlight.astro.build/", guide.route) == "https://starlight.astro.build/fr/guides/i18n/"


def test_starlight_corpus_content_folder_is_found_from_inside_it() -> None:
    site, pages = read_site(corpus("starlight-docs") / "docs" / "src" / "content" / "docs")
    assert site.name == "starlight" and len(site.languages) == 17 and len(pages) == 338
    assert pages["zh-cn/guides/i18n.mdx"].language == "zh-cn"


@pytest.mark.parametrize("folder, versions, default", [
    ("website", ("3.8.1", "2.x", "next"), "3.8.1"),
    ("website/docs", ("next",), "next"),
])
def test_docusaurus_corpus_default_version_has_pages(folder: str, versions: tuple[str, ...], default: str) -> None:
    site, pages = read_site(corpus("docusaurus-docs") / folder)
    assert site.versions == versions and site.default_version == default
    assert sum(p.version == site.default_version for p in pages.values()) >= 80
    assert site.languages == ("en",) and {p.language for p in pages.values()} == {"en"}
    install = pages["docs/installation.mdx" if folder == "website" else "installation.mdx"]
    assert join_url("https://docusaurus.io/", install.route) == "https://docusaurus.io/docs/next/installation"


def test_fastapi_corpus_is_english_only() -> None:
    languages, default, pages = languages_of(corpus("fastapi-docs") / "docs" / "en")
    assert languages == ("en",) and default == "en" and set(pages.values()) == {"en"}


def test_marten_corpus_names_no_language() -> None:
    site, pages = read_site(corpus("marten-docs"))
    assert site.languages == () and site.default_language == "" and {p.language for p in pages.values()} == {""}
