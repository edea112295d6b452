"""The llms.txt format (llmstxt.org): one H1, a blockquote summary, then H2 sections of Markdown links
with notes; `## Optional` holds what a reader short of context may skip (here: changelogs). Beside it,
llms-full.txt (every page's text, capped) and each page's Markdown copy, named after its URL."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from pgcite.store.pages_sql import PageText


@dataclass(frozen=True)
class Site:
    """One source as llms.txt presents it."""

    name: str
    base_url: str
    pages: Sequence[PageText]  # the default version's, in URL order


def copy_name(page: PageText, base_url: str) -> str:
    """Where a page's Markdown copy lives, relative to the source's root: its URL's route plus `.md`
    (`guide/intro/` -> `guide/intro.md`, the home page -> `index.md`), or its source path without a base URL."""
    if base_url and page.url.startswith(base_url.rstrip("/")):
        route = page.url[len(base_url.rstrip("/")) :].split("#", 1)[0].strip("/")
    else:
        route = posixpath.splitext(page.path)[0]
    if not route or route.endswith("/index"):
        route = posixpath.join(route.removesuffix("index").strip("/"), "index") if route else "index"
    return route.removesuffix(".html") + ".md"


def _one_line(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())


def _link(page: PageText, href: str) -> str:
    note = f": {_one_line(page.description)}" if page.description else ""
    return f"- [{_one_line(page.title) or page.path}]({href}){note}"


def _section_name(page: PageText, base_url: str) -> str:
    """Pages are grouped by the first segment of their route, as most docs sites' sidebars are."""
    first = copy_name(page, base_url).split("/", 1)
    return first[0].replace("-", " ").replace("_", " ").capitalize() if len(first) > 1 else "Docs"


def summary(site: Site) -> str:
    home = next((p for p in site.pages if copy_name(p, site.base_url) == "index.md" and p.description), None)
    return _one_line(home.description) if home else f"The documentation of {site.name}: {len(site.pages)} pages."


def site_index(site: Site, href: Callable[[PageText], str]) -> str:
    """`/SOURCE/llms.txt`: the source's pages as links (to their Markdown copies, through `href`)."""
    sections: dict[str, list[str]] = {}
    for page in site.pages:
        name = "Optional" if page.kind == "changelog" else _section_name(page, site.base_url)
        sections.setdefault(name, []).append(_link(page, href(page)))
    optional = sections.pop("Optional", None)
    parts = [f"# {site.name}", f"> {summary(site)}"]
    parts += [f"## {name}\n\n" + "\n".join(links) for name, links in sections.items()]
    if optional:
        parts.append("## Optional\n\n" + "\n".join(optional))
    return "\n\n".join(parts) + "\n"


def root_index(title: str, sites: Sequence[Site], href: Callable[[Site], str]) -> str:
    """`/llms.txt` of a server holding several sources: one section per source, linking its own files."""
    parts = [f"# {title}", f"> Documentation answered with citations: {len(sites)} sources."]
    for site in sites:
        parts.append(
            f"## {site.name}\n\n- [{site.name}: pages]({href(site)}llms.txt): {summary(site)}\n"
            f"- [{site.name}: full text]({href(site)}llms-full.txt): every page in one file"
        )
    return "\n\n".join(parts) + "\n"


def page_copy(page: PageText) -> str:
    """A page's Markdown copy: its text under its title, and the URL it is published at."""
    text = (page.markdown or "").strip()
    if not text.startswith("# "):
        text = f"# {page.title}\n\n{text}"
    return f"{text}\n\nSource: {page.url}\n" if page.url else f"{text}\n"


def _changelogs_last(pages: Iterable[PageText]) -> Iterator[PageText]:
    later = []
    for page in pages:
        if page.kind == "changelog":
            later.append(page)
        else:
            yield page
    yield from later


def full_text(name: str, summary: str, pages: Iterable[PageText], max_bytes: int) -> Iterator[str]:
    """`llms-full.txt`, in pieces: every page's copy in order (changelogs last) while they fit in
    `max_bytes`, then a note saying how many were left out."""
    head = f"# {name}\n\n> {summary}\n"
    yield head
    written, left_out = len(head.encode()), 0
    for page in _changelogs_last(pages):
        piece = "\n---\n\n" + page_copy(page)
        if left_out or written + len(piece.encode()) > max_bytes:
            left_out += 1
            continue
        written += len(piece.encode())
        yield piece
    if left_out:
        yield (
            f"\n---\n\n> Capped at {max_bytes:,} bytes: {left_out} more pages are not in this file; "
            "llms.txt lists them all, each with its own Markdown copy.\n"
        )
