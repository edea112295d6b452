"""The Hugo shortcodes that read other files of the content tree: `include` (gohugo.io's docs:
another page's content, found as GetPage finds it), the glossary and page listings of those docs,
`param`, and a site's own shortcodes whose template is plain text. Everything is read from the
content roots only, through the page's bounded includes."""

from __future__ import annotations

import re
from typing import Protocol

from pgcite.ingest import markup
from pgcite.ingest.anchors import github
from pgcite.ingest.sites.base import Files, Includes
from pgcite.ingest.sites.hugo_config import HugoConfig
from pgcite.ingest.sites.hugo_pages import Entry, Tree
from pgcite.ingest.sites.shortcodes import Call


class Hugo(Protocol):
    """What these shortcodes read of the Hugo site (sites/hugo.py), which imports this module."""

    files: Files
    config: HugoConfig
    default_language: str
    templates: dict[str, str | None]

    @property
    def tree(self) -> Tree: ...

    def entry(self, site_path: str) -> Entry | None: ...

    def included(self, entry: Entry, includes: Includes, depth: int, shown_as: str) -> str: ...

    def href(self, entry: Entry) -> str: ...


__all__ = ["glossary_links", "resolve"]

_GLOSSARY = "/quick-reference/glossary"  # where gohugo.io's glossary shortcodes find their terms
_GLOSSARY_LINK = re.compile(r"\[([^\[\]\n]+)\]\(g\)")
_TEMPLATE_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)


def _urlize(term: str) -> str:
    """Hugo's `urlize` of a glossary term: lower case, spaces to hyphens."""
    return re.sub(r"[^\w.~+-]", "", re.sub(r"\s+", "-", term.strip().lower()))


def resolve(site: Hugo, call: Call, includes: Includes, depth: int) -> str | None:
    """What `call` renders as when it reads the site's content (None: not one of those)."""
    name = call.name.lower()
    page = site.entry(includes.page)
    language = page.language if page is not None else site.default_language
    if name in ("include", "glossary-term", "get-page-desc"):
        ref = call.get(0) or call.get("path")
        if name == "glossary-term":
            ref = f"{_GLOSSARY}/{_urlize(ref)}"
        found = site.tree.get(ref, page, language) if ref else None
        if name == "get-page-desc":
            return found.description if found is not None else ""
        if found is None:
            if name == "include":
                includes.problems.append(f"include {ref or '(no path)'} left out: no such page in the content")
                return ""
            return call.get(0)  # a term without its page: the term itself
        return site.included(found, includes, depth, ref)
    if name == "glossary":
        return _glossary(site, includes, depth, page, language)
    if name in ("quick-reference", "render-list-of-pages-in-section", "render-table-of-pages-in-section"):
        return _listing(site, call, includes, depth, page, language)
    if name == "param":
        return _param(site, call, includes.page)
    if call.inner is None:
        return _template(site, call.name)
    return None


def _template(site: Hugo, name: str) -> str | None:
    """A shortcode's template when it is plain text (no template action): what it renders."""
    if name not in site.templates:
        site.templates[name] = None
        for folder in ["layouts", *(f"themes/{t}/layouts" for t in site.config.themes)]:
            for kind in ("_shortcodes", "shortcodes"):
                try:
                    text = _TEMPLATE_COMMENT.sub("", site.files.read(f"{folder}/{kind}/{name}.html"))
                except OSError:
                    continue
                site.templates[name] = None if "{{" in text else text.strip()
                return site.templates[name]
    return site.templates[name]


def _param(site: Hugo, call: Call, site_path: str) -> str:
    """`param`: the page's parameter (its own, else cascaded), else the site's."""
    key = call.get(0) or call.get("name")
    entry = site.entry(site_path)
    value = site.tree.param(entry, key) if entry is not None else None
    if value is None:
        value = site.config.params
        for part in key.lower().split("."):
            value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


def _pages(site: Hugo, ref: str, kind: str, page: Entry | None, language: str) -> list[Entry]:
    section = site.tree.get(ref, page, language) if ref else None
    return site.tree.children(section, kind) if section is not None else []


def _describe(site: Hugo, entry: Entry, includes: Includes, depth: int, prefix: str = "") -> tuple[str, str]:
    """(a Markdown link to `entry`, its description), its file recorded as read by this page."""
    includes.read(entry.site_path, depth, entry.logical)  # a listing changes when the pages it lists do
    title = prefix + entry.title
    code = site.tree.param(entry, "isfunctionormethod") is True  # gohugo.io shows those names as code
    return f"[{'`' + title + '`' if code else title}]({site.href(entry)})", entry.description


def _listing(site: Hugo, call: Call, includes: Includes, depth: int, page: Entry | None, language: str) -> str:
    name = call.name.lower()
    if name == "quick-reference":  # each child section: a heading, its description, its pages
        ref = "/" + call.get("section").strip("/")
        blocks = []
        for section in _pages(site, ref, "section", page, language):
            blocks.append(f"## {section.title}\n\n{section.description}".rstrip())
            for entry in _pages(site, section.logical, "page", page, language):
                link, description = _describe(site, entry, includes, depth)
                blocks.append(f"{link}\n: {description}")
        return "\n\n".join(blocks)
    if call.get("filter") and call.get("filterType").lower() == "include":
        return ""  # the pages a named filter keeps are listed in the site's data files, not content
    entries = sorted(_pages(site, call.get("path"), "page", page, language), key=lambda e: e.title.lower())
    rows = [_describe(site, e, includes, depth, call.get("titlePrefix")) for e in entries]
    if name == "render-table-of-pages-in-section":
        head = f"{call.get('headingColumn1') or 'Item'}|{call.get('headingColumn2') or 'Description'}\n:--|:--"
        return "\n".join([head, *(f"{link}|{description}" for link, description in rows)]) if rows else ""
    return "\n\n".join(f"{link}\n: {description}" for link, description in rows)


def _glossary(site: Hugo, includes: Includes, depth: int, page: Entry | None, language: str) -> str:
    """gohugo.io's glossary: every term with its definition. Each term is a heading here, so that
    its section's anchor is the one Hugo gives the term (`autoDefinitionTermID`)."""
    terms = sorted(_pages(site, _GLOSSARY, "page", page, language), key=lambda e: str(e.front.get("title", "")).lower())
    blocks = []
    for term in terms:
        body = site.included(term, includes, depth, term.logical)
        title = str(term.front.get("title") or term.title)
        reference = term.front.get("reference")
        if isinstance(reference, str) and reference:  # a page's logical path links to its URL
            path, _, fragment = reference.partition("#")
            target = site.tree.get(path, None, language) if "://" not in reference else None
            link = site.href(target) + (f"#{fragment}" if fragment else "") if target is not None else reference
            body += f"\n\nSee [details]({link})."
        blocks.append(f"## {title}\n\n{body}")
    return "\n\n".join(blocks)


def _singular(term: str) -> str:
    for plural, single in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("s", "")):
        if term.endswith(plural) and len(term) > len(plural) + 1:
            return term[: -len(plural)] + single
    return term


def glossary_links(site: Hugo, text: str, language: str) -> str:
    """gohugo.io's `[term](g)` links, as its link render hook writes them: to the term's entry on
    the glossary page (the term as given, else its singular). Others stay as written."""
    glossary = site.tree.get(_GLOSSARY, None, language) if "](g)" in text else None
    if glossary is None:
        return text

    def link(match: re.Match[str]) -> str:
        term = " ".join(re.sub(r"[_*`]", "", restore(match[1])).lower().split())
        for candidate in dict.fromkeys((term, _singular(term))):
            if site.tree.get(f"{_GLOSSARY}/{_urlize(candidate)}", None, language) is not None:
                return f"[{match[1]}]({site.href(glossary)}#{github(candidate)})"
        return match[0]

    protected, restore = markup.protect_code_spans(text)  # a code span stays as written; its text names a term
    return restore(_GLOSSARY_LINK.sub(link, protected))
