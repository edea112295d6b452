"""Acceptance on the shared corpora (../shared/corpora): FastAPI's MkDocs site and Docusaurus's own
MDX site are read, cleaned, routed and versioned as a new user would ingest them. No database and
no model: pages go through the same site layer and chunker as `pgcite ingest`."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import pytest

from pgcite.ingest.chunking import chunk_by_headings
from pgcite.config import Settings
from pgcite.embedding.models import bundled_model_dir
from pgcite.embedding.tokenizer import load_tokenizer
from pgcite.ingest.flow import open_location
from pgcite.ingest.sites import Page, Site, detect, join_url
from pgcite.ingest.sites.leftovers import leftovers
from pgcite.ingest.sources import Document
from tests.conftest import corpus

FASTAPI_URLS = [  # a sample of 30 pages: (path, the URL of its first section), as fastapi.tiangolo.com serves it
    ("docs/advanced/advanced-python-types.md", "https://fastapi.tiangolo.com/advanced/advanced-python-types/#using-union-or-optional"),
    ("docs/advanced/behind-a-proxy.md", "https://fastapi.tiangolo.com/advanced/behind-a-proxy/#proxy-forwarded-headers"),
    ("docs/advanced/custom-response.md", "https://fastapi.tiangolo.com/advanced/custom-response/#json-responses"),
    ("docs/advanced/dataclasses.md", "https://fastapi.tiangolo.com/advanced/dataclasses/#dataclasses-in-response-model"),
    ("docs/advanced/events.md", "https://fastapi.tiangolo.com/advanced/events/#use-case"),
    ("docs/advanced/index.md", "https://fastapi.tiangolo.com/advanced/#additional-features"),
    ("docs/advanced/json-base64-bytes.md", "https://fastapi.tiangolo.com/advanced/json-base64-bytes/#base64-vs-files"),
    ("docs/advanced/openapi-webhooks.md", "https://fastapi.tiangolo.com/advanced/openapi-webhooks/#webhooks-steps"),
    ("docs/advanced/response-directly.md", "https://fastapi.tiangolo.com/advanced/response-directly/#return-a-response"),
    ("docs/advanced/sub-applications.md", "https://fastapi.tiangolo.com/advanced/sub-applications/#mounting-a-fastapi-application"),
    ("docs/advanced/templates.md", "https://fastapi.tiangolo.com/advanced/templates/#install-dependencies"),
    ("docs/advanced/using-request-directly.md", "https://fastapi.tiangolo.com/advanced/using-request-directly/#details-about-the-request-object"),
    ("docs/deployment/https.md", "https://fastapi.tiangolo.com/deployment/https/#lets-encrypt"),
    ("docs/editor-support.md", "https://fastapi.tiangolo.com/editor-support/#setup-and-installation"),
    ("docs/fastapi-people.md", "https://fastapi.tiangolo.com/fastapi-people/#creator"),
    ("docs/history-design-future.md", "https://fastapi.tiangolo.com/history-design-future/#alternatives"),
    ("docs/how-to/conditional-openapi.md", "https://fastapi.tiangolo.com/how-to/conditional-openapi/#about-security-apis-and-docs"),
    ("docs/how-to/configure-swagger-ui.md", "https://fastapi.tiangolo.com/how-to/configure-swagger-ui/#disable-syntax-highlighting"),
    ("docs/management.md", "https://fastapi.tiangolo.com/management/#owner"),
    ("docs/reference/responses.md", "https://fastapi.tiangolo.com/reference/responses/#fastapi-responses"),
    ("docs/reference/status.md", "https://fastapi.tiangolo.com/reference/status/#example"),
    ("docs/release-notes.md", "https://fastapi.tiangolo.com/release-notes/#refactors"),
    ("docs/tutorial/background-tasks.md", "https://fastapi.tiangolo.com/tutorial/background-tasks/#using-backgroundtasks"),
    ("docs/tutorial/body.md", "https://fastapi.tiangolo.com/tutorial/body/#import-pydantics-basemodel"),
    ("docs/tutorial/cors.md", "https://fastapi.tiangolo.com/tutorial/cors/#origin"),
    ("docs/tutorial/header-param-models.md", "https://fastapi.tiangolo.com/tutorial/header-param-models/#header-parameters-with-a-pydantic-model"),
    ("docs/tutorial/query-param-models.md", "https://fastapi.tiangolo.com/tutorial/query-param-models/#query-parameters-with-a-pydantic-model"),
    ("docs/tutorial/request-form-models.md", "https://fastapi.tiangolo.com/tutorial/request-form-models/#pydantic-models-for-forms"),
    ("docs/tutorial/response-status-code.md", "https://fastapi.tiangolo.com/tutorial/response-status-code/#about-http-status-codes"),
    ("docs/tutorial/sql-databases.md", "https://fastapi.tiangolo.com/tutorial/sql-databases/#install-sqlmodel"),
]

DOCUSAURUS_URLS = [  # the same for docusaurus.io, pages of the newest release (3.8.1), served under /docs/;
    # an explicit {#id} wins over the heading's slug (#details, #getTranslationFiles)
    ("versioned_docs/version-3.8.1/advanced/ssg.mdx", "https://docusaurus.io/docs/advanced/ssg#understanding-ssr"),
    ("versioned_docs/version-3.8.1/api/docusaurus.config.js.mdx", "https://docusaurus.io/docs/api/docusaurus-config#overview"),
    ("versioned_docs/version-3.8.1/api/misc/eslint-plugin/README.mdx", "https://docusaurus.io/docs/api/misc/@docusaurus/eslint-plugin#installation"),
    ("versioned_docs/version-3.8.1/api/misc/eslint-plugin/no-html-links.mdx", "https://docusaurus.io/docs/api/misc/@docusaurus/eslint-plugin/no-html-links#details"),
    ("versioned_docs/version-3.8.1/api/misc/eslint-plugin/no-untranslated-text.mdx", "https://docusaurus.io/docs/api/misc/@docusaurus/eslint-plugin/no-untranslated-text#details"),
    ("versioned_docs/version-3.8.1/api/misc/eslint-plugin/prefer-docusaurus-heading.mdx", "https://docusaurus.io/docs/api/misc/@docusaurus/eslint-plugin/prefer-docusaurus-heading#details"),
    ("versioned_docs/version-3.8.1/api/misc/logger/logger.mdx", "https://docusaurus.io/docs/api/misc/@docusaurus/logger#apis"),
    ("versioned_docs/version-3.8.1/api/plugin-methods/README.mdx", "https://docusaurus.io/docs/api/plugin-methods/#plugin-module"),
    ("versioned_docs/version-3.8.1/api/plugin-methods/i18n-lifecycles.mdx", "https://docusaurus.io/docs/api/plugin-methods/i18n-lifecycles#getTranslationFiles"),
    ("versioned_docs/version-3.8.1/api/plugins/plugin-content-blog.mdx", "https://docusaurus.io/docs/api/plugins/@docusaurus/plugin-content-blog#installation"),
    ("versioned_docs/version-3.8.1/api/plugins/plugin-ideal-image.mdx", "https://docusaurus.io/docs/api/plugins/@docusaurus/plugin-ideal-image#installation"),
    ("versioned_docs/version-3.8.1/api/plugins/plugin-sitemap.mdx", "https://docusaurus.io/docs/api/plugins/@docusaurus/plugin-sitemap#installation"),
    ("versioned_docs/version-3.8.1/api/themes/theme-live-codeblock.mdx", "https://docusaurus.io/docs/api/themes/@docusaurus/theme-live-codeblock#configuration"),
    ("versioned_docs/version-3.8.1/api/themes/theme-mermaid.mdx", "https://docusaurus.io/docs/api/themes/@docusaurus/theme-mermaid#configuration"),
    ("versioned_docs/version-3.8.1/cli.mdx", "https://docusaurus.io/docs/cli#docusaurus-cli-commands"),
    ("versioned_docs/version-3.8.1/configuration.mdx", "https://docusaurus.io/docs/configuration#syntax-to-declare-docusaurus-config"),
    ("versioned_docs/version-3.8.1/guides/docs/docs-introduction.mdx", "https://docusaurus.io/docs/docs-introduction#docs-only-mode"),
    ("versioned_docs/version-3.8.1/guides/docs/sidebar/items.mdx", "https://docusaurus.io/docs/sidebar/items#sidebar-item-doc"),
    ("versioned_docs/version-3.8.1/guides/docs/versioning.mdx", "https://docusaurus.io/docs/versioning#overview"),
    ("versioned_docs/version-3.8.1/guides/markdown-features/markdown-features-admonitions.mdx", "https://docusaurus.io/docs/markdown-features/admonitions#usage-with-prettier"),
    ("versioned_docs/version-3.8.1/guides/markdown-features/markdown-features-assets.mdx", "https://docusaurus.io/docs/markdown-features/assets#images"),
    ("versioned_docs/version-3.8.1/guides/markdown-features/markdown-features-code-blocks.mdx", "https://docusaurus.io/docs/markdown-features/code-blocks#code-title"),
    ("versioned_docs/version-3.8.1/guides/markdown-features/markdown-features-intro.mdx", "https://docusaurus.io/docs/markdown-features#mdx-vs-commonmark"),
    ("versioned_docs/version-3.8.1/guides/markdown-features/markdown-features-react.mdx", "https://docusaurus.io/docs/markdown-features/react#exporting-components"),
    ("versioned_docs/version-3.8.1/guides/markdown-features/markdown-features-toc.mdx", "https://docusaurus.io/docs/markdown-features/toc#markdown-headings"),
    ("versioned_docs/version-3.8.1/i18n/i18n-crowdin.mdx", "https://docusaurus.io/docs/i18n/crowdin#crowdin-overview"),
    ("versioned_docs/version-3.8.1/installation.mdx", "https://docusaurus.io/docs/installation#requirements"),
    ("versioned_docs/version-3.8.1/migration/index.mdx", "https://docusaurus.io/docs/migration#troubleshooting-upgrades"),
    ("versioned_docs/version-3.8.1/migration/v2/migration-translated-sites.mdx", "https://docusaurus.io/docs/migration/v2/translated-sites#i18n-differences"),
    ("versioned_docs/version-3.8.1/migration/v2/migration-versioned-sites.mdx", "https://docusaurus.io/docs/migration/v2/versioned-sites#migrate-your-versioned_docs-front-matter"),
]

# Link targets in the Docusaurus pages that name an element, not a heading (<details id="node-env">,
# a table row, an example link): no heading rule could give them.
NOT_HEADINGS = {"node-env", "hooks.onBrokenMarkdownLinks", "authors", "disableInDev", "heading-id", "hello-world",
                "bonjour-le-monde"}


def read(location: Path, base_url: str = "") -> tuple[Site, dict[str, Page], dict[str, str]]:
    source = open_location(str(location), Settings())
    site = detect(source)
    source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
    documents = [item for item in source.scan() if isinstance(item, Document)]
    return site, {d.path: site.render(d) for d in documents}, {d.path: d.text for d in documents}


def first_section_url(page: Page, base_url: str) -> str:
    anchor = next(s.anchor for s in page.parsed.sections if s.anchor and s.blocks)
    return join_url(base_url, page.route, anchor)


def assert_no_markup(pages: dict[str, Page]) -> None:
    count = load_tokenizer(bundled_model_dir() / "tokenizer.json").count
    dirty = []
    for path, page in pages.items():
        for chunk in chunk_by_headings(page.parsed, count):
            if found := leftovers(chunk.content) + leftovers(chunk.breadcrumb, heading=True):
                dirty.append(f"{path} chunk {chunk.index}: {found}")
    assert dirty == []


def heading_links(texts: dict[str, str], pages: dict[str, Page]) -> tuple[int, list[str]]:
    """Links with an anchor to a page of the site ([x](other.md#a), [x](#a)): how many name an
    anchor pgcite computed, and the ones that do not."""
    found, missing = 0, []
    for path, text in texts.items():
        for target, anchor in re.findall(r"\]\(((?!https?:)[^)#\s]*)#([^)\s]+)\)", text):
            linked = posixpath.normpath(posixpath.join(posixpath.dirname(path), target)) if target else path
            if linked in pages:
                if anchor in {s.anchor for s in pages[linked].parsed.sections}:
                    found += 1
                else:
                    missing.append(f"{path} -> {target}#{anchor}")
    return found, missing


def test_fastapi_mkdocs_site() -> None:
    root = corpus("fastapi-docs") / "docs" / "en"
    site, pages, texts = read(root)
    assert site.name == "mkdocs" and site.base_url == "https://fastapi.tiangolo.com/"
    assert len(pages) == len(list((root / "docs").rglob("*.md"))) == 155  # every page
    assert_no_markup(pages)
    # Included code is where the page includes it: {* ../../docs_src/cors/tutorial001_py310.py *}
    cors = {s.heading_path[-1]: "\n\n".join(b.text for b in s.blocks) for s in pages["docs/tutorial/cors.md"].parsed.sections if s.heading_path}
    assert "app.add_middleware(\n    CORSMiddleware,\n    allow_origins=origins," in cors["Use CORSMiddleware"]
    # ln[1:11] keeps those lines only; title[...] labels the block
    sql = "\n\n".join(b.text for s in pages["docs/tutorial/sql-databases.md"].parsed.sections for b in s.blocks)
    assert "from sqlmodel import Field, Session, SQLModel, create_engine, select" in sql
    assert "**app/routers/users.py**" in "\n".join(b.text for s in pages["docs/tutorial/bigger-applications.md"].parsed.sections for b in s.blocks)
    assert [p.problems for p in pages.values() if p.problems] == [
        ("include ../../fastapi/openapi/docs.py left out: ../../fastapi/openapi/docs.py not found",)]  # not in the corpus
    for path, url in FASTAPI_URLS:
        assert first_section_url(pages[path], site.base_url) == url, path
    found, missing = heading_links(texts, pages)
    assert found >= 30 and missing == []
    assert pages["docs/release-notes.md"].kind == "changelog"
    assert sum(p.kind == "changelog" for p in pages.values()) == 1


def test_docusaurus_mdx_site_with_versions() -> None:
    root = corpus("docusaurus-docs") / "website"
    site, pages, texts = read(root)
    assert site.name == "docusaurus"
    assert site.versions == ("3.8.1", "2.x", "next") and site.default_version == "3.8.1"
    files = [p for p in root.rglob("*.mdx") if "docs" in p.relative_to(root).parts[0]]
    partials = [p for p in files if any(part.startswith("_") for part in p.relative_to(root).parts)]
    assert partials and len(pages) == len(files) - len(partials)  # every page, no partial
    assert {p.version for p in pages.values()} == {"3.8.1", "2.x", "next"}
    assert_no_markup(pages)
    # A partial is read into the page that imports it, where its component is placed.
    blog = "\n\n".join(b.text for s in pages["versioned_docs/version-3.8.1/api/plugins/plugin-content-blog.mdx"].parsed.sections for b in s.blocks)
    assert "By convention, the plugin will look for a `tags.yml` file" in blog
    for path, url in DOCUSAURUS_URLS:
        assert first_section_url(pages[path], "https://docusaurus.io/") == url, path
    # The same page in the version in work and in an older release.
    assert pages["docs/installation.mdx"].route == "docs/next/installation"
    assert pages["versioned_docs/version-2.x/installation.mdx"].route == "docs/2.x/installation"
    found, missing = heading_links(texts, pages)
    assert found > 700
    assert {m.rsplit("#", 1)[1] for m in missing} <= NOT_HEADINGS


@pytest.mark.parametrize("folder, site_name", [("fastapi-docs/docs/en/docs", "mkdocs"), ("docusaurus-docs/website/docs", "docusaurus")])
def test_the_docs_folder_inside_a_site_is_read_as_that_site(folder: str, site_name: str) -> None:
    root = corpus(folder.split("/")[0]).parent / folder
    site, pages, _ = read(root)
    assert site.name == site_name and len(pages) > 50
    problems = {problem for page in pages.values() for problem in page.problems}
    assert all("not found" in problem for problem in problems)  # files missing from the corpus, nothing refused
