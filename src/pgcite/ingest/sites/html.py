"""A published site's HTML (a folder of built pages: Sphinx's `_build/html`, a static export):
each page's main content, without the chrome around it (navigation, sidebars, headers and
footers, "edit this page", permalink marks), turned into Markdown by markdownify on
BeautifulSoup, with each heading anchored by the id the page gives it (on the heading, or on the
section it opens) so citations open the section. `x/index.html` is routed `x/`, as it is served."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

from pgcite.ingest.markdown import parse_body
from pgcite.ingest.sites.base import Files, Page, Site
from pgcite.ingest.sites.changelog import is_changelog
from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sources import Document

__all__ = ["PublishedHtml", "html_markdown"]

# Where generators put a page's own content, most specific first.
_MAIN = (
    "main", "[role=main]", "article", "div.body", "div.document", "div.md-content", "div.theme-doc-markdown",
    "div.markdown-section", "#content", "#main-content",
)  # fmt: skip
# What is around the content, not of it.
_CHROME = (
    "script", "style", "noscript", "template", "svg", "iframe", "form", "button", "nav", "header", "footer", "aside",
    "[role=navigation]", "[role=search]", "[role=banner]", "[role=contentinfo]", "[aria-hidden=true]", "[hidden]",
    ".headerlink", ".anchorlink", ".hash-link", ".header-anchor", ".sr-only", ".visually-hidden", ".breadcrumbs",
    ".breadcrumb", ".toc", ".sidebar", ".sphinxsidebar", ".related", ".edit-this-page", ".theme-edit-this-page",
    ".pagination-nav", ".prev-next", ".cookie-banner", "#cookie-banner", ".copybtn", ".md-source-file",
    "[class*=language-] > .lang",  # VitePress's label of a code block's language, shown over the code
    # A version or status badge beside a heading's text ("Rebuilds <Badge text="7.30"/>"): not the
    # heading's name, as markdown-it-anchor and the sources' reading leave it out.
    ":is(h1, h2, h3, h4, h5, h6) [class*=badge i]",
)  # fmt: skip
_EDIT_LINK = re.compile(
    r"^\s*(?:edit (?:this page|on github|on gitlab)|view (?:page )?source|improve this page)\s*$", re.I
)
_LANGUAGE_CLASS = re.compile(r"^(?:language|lang|highlight)-([\w+#-]+)$")


class _Converter(MarkdownConverter):
    """markdownify, with a heading's id kept as `{#id}` and code's language from its classes."""

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:
        heading = super().convert_hN(n, el, text, parent_tags)  # type: ignore[misc]  # untyped in markdownify
        anchor = _heading_id(el)
        return heading.rstrip("\n") + f" {{#{anchor}}}\n\n" if anchor and heading.strip() else heading


def _code_language(el: Tag) -> str:
    for node in (el, el.find("code"), el.parent, el.parent.parent if el.parent else None):
        if isinstance(node, Tag):
            for cls in node.get("class") or []:
                if found := _LANGUAGE_CLASS.match(cls):
                    return "" if found.group(1) in {"default", "none", "text"} else found.group(1)
    return ""


def _heading_id(el: Tag) -> str:
    """The id a link to this heading uses: its own, an anchor inside it, or that of the section it
    is the first element of (Sphinx, docutils)."""
    if el.get("id"):
        return str(el["id"])
    inner = el.find(id=True)
    if isinstance(inner, Tag):
        return str(inner["id"])
    parent = el.parent
    if isinstance(parent, Tag) and parent.get("id") and parent.find(re.compile(r"^h[1-6]$")) is el:
        return str(parent["id"])
    previous = el.find_previous_sibling()
    if (
        isinstance(previous, Tag)
        and previous.name == "span"
        and previous.get("id")
        and not previous.get_text(strip=True)
    ):
        return str(previous["id"])
    return ""


def html_markdown(html: str) -> tuple[str, str, str]:
    """(title, Markdown of the main content, language) of a page."""
    soup = BeautifulSoup(html, "html.parser")
    root = soup.find("html")
    language = (language_tag(root.get("lang")) or "") if isinstance(root, Tag) else ""
    title_tag = soup.find("title")
    main = next((found for selector in _MAIN if (found := soup.select_one(selector)) is not None), soup.body or soup)
    for selector in _CHROME:
        for element in main.select(selector):
            element.decompose()
    for title_tag_ in main.select(".admonition-title, .admonition > .title"):  # a note's title, as the page shows it
        title_tag_.name = "strong"
        title_tag_.wrap(soup.new_tag("p"))
    for link in main.find_all("a"):
        if _EDIT_LINK.match(link.get_text(" ", strip=True)):
            link.decompose()
        elif link.get("title"):
            del link["title"]  # a tooltip, not what the page reads
    h1 = main.find("h1")
    title = (h1.get_text(" ", strip=True) if h1 else "") or (title_tag.get_text(" ", strip=True) if title_tag else "")
    converter = _Converter(heading_style="ATX", bullets="-", code_language_callback=_code_language, escape_misc=False)
    return title, converter.convert_soup(main), language


class PublishedHtml(Site):
    name = "html"
    pages = ("*.html", "*.htm")
    # Pages that are the generator's, not the docs': search, indexes, errors, sources.
    partials = (
        *(f"{name}{suffix}" for name in ("search", "genindex", "py-modindex") for suffix in (".html", "/index.html")),
        "404.html", "_sources/**", "_static/**", "_images/**",
    )  # fmt: skip

    @classmethod
    def detect(cls, files: Files) -> bool:
        """A built site: an index.html, and no Markdown home page beside it."""
        return files.exists("index.html") and not any(files.exists(n) for n in ("index.md", "README.md", "readme.md"))

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        folder, name = posixpath.split(site_path)
        if name in ("index.html", "index.htm"):
            return f"{folder}/" if folder else ""
        return site_path

    def render(self, document: Document) -> Page:
        site_path = self.files.to_site(document.path)
        title, body, language = html_markdown(document.text)
        parsed = parse_body(body, {"title": title} if title else {}, self.fallback_title(site_path, {}), self.dialect)
        kind = "changelog" if is_changelog(site_path, parsed) else "page"
        return Page(
            document.path, parsed.title, parsed, self.route(site_path, {}), "", kind, language or self.default_language
        )
