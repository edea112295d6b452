"""The llms.txt format (llmstxt.org): one H1, a blockquote summary, then H2 sections of Markdown links
with notes; `## Optional` holds what a reader short of context may skip (here: changelogs). Beside it,
llms-full.txt (every page's text, capped) and each page's Markdown copy, named after its URL."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from pgcite.store.pages_sql import PageText

_PUBLISHED_SUFFIX = re.compile(r"\.(?:html?|mdx?)$")


@dataclass(frozen=True)
class Site:
    """One source as llms.txt presents it."""

    name: str
    base_url: str
    pages: Sequence[PageText]  # the default version's, in reading order (pages_sql.list_pages)


def copy_name(page: PageText, base_url: str) -> str:
    """Where a page's Markdown copy lives, relative to the source's root: its URL's route plus `.md`
    (`guide/intro/` -> `guide/intro.md`, the home page -> `index.md`); its source path without a base URL."""
    base = base_url.rstrip("/")
    if base and page.url.startswith(base):
        route = _PUBLISHED_SUFFIX.sub("", page.url[len(base) :].split("#", 1)[0].strip("/"))
    else:
        route = posixpath.splitext(page.path)[0]
    return f"{route or 'index'}.md"


def _one_line(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())


def _link(page: PageText, href: str) -> str:
    note = f": {_one_line(page.description)}" if page.description else ""
    href = href.replace(" ", "%20").replace("(", "%28").replace(")", "%29")  # a Markdown link ends at ")"
    return f"- [{_one_line(page.title) or page.path}]({href}){note}"


def _section_names(pages: Sequence[PageText], base_url: str) -> list[str]:
    """Pages grouped by the first folder of their route below what all routes share (`docs/`), as
    most docs sites' sidebars are, a folder's own page with it; the other pages make "Docs"."""
    routes = [copy_name(p, base_url).removesuffix(".md").split("/") for p in pages]
    shared = 0
    while routes and all(len(r) > shared and r[shared] == routes[0][shared] for r in routes):
        shared += 1
    folders = {r[shared] for r in routes if len(r) > shared + 1}
    named = [r[shared] if len(r) > shared and r[shared] in folders else "docs" for r in routes]
    return [name.replace("-", " ").replace("_", " ").capitalize() for name in named]


def summary(site: Site) -> str:
    """The blockquote under the title: the home page's description, or what the source holds."""
    home = next((p for p in site.pages if copy_name(p, site.base_url) == "index.md" and p.description), None)
    return _one_line(home.description) if home else f"The documentation of {site.name}: {len(site.pages)} pages."


def site_index(site: Site, href: Callable[[PageText], str]) -> str:
    """`/SOURCE/llms.txt`: the source's pages as links (to their Markdown copies, through `href`)."""
    sections: dict[str, list[str]] = {}
    for page, name in zip(site.pages, _section_names(site.pages, site.base_url), strict=True):
        sections.setdefault("Optional" if page.kind == "changelog" else name, []).append(_link(page, href(page)))
    optional = sections.pop("Optional", None)
    parts = [f"# {site.name}", f"> {summary(site)}"]
    parts += [f"## {name}\n\n" + "\n".join(links) for name, links in sections.items()]
    if optional:
        parts.append("## Optional\n\n" + "\n".join(optional))
    return "\n\n".join(parts) + "\n"


def root_index(title: str, sites: Sequence[Site], href: Callable[[Site], str]) -> str:
    """`/llms.txt` of a server holding several sources: one section per source, linking its own files."""
    parts = [f"# {title}", f"> Documentation answered with citations, in {len(sites)} source(s)."]
    for site in sites:
        parts.append(
            f"## {site.name}\n\n- [{site.name}: pages]({href(site)}llms.txt): {summary(site)}\n"
            f"- [{site.name}: full text]({href(site)}llms-full.txt): every page in one file"
        )
    return "\n\n".join(parts) + "\n"


def page_copy(page: PageText) -> str:
    """A page's Markdown copy: its text under its title, and the URL it is published at."""
    if page.markdown is None:
        text = f"(Stored before pgcite kept pages' text: `pgcite sync {page.source}` reads it again.)"
    else:
        text = page.markdown.strip()
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


@dataclass
class FullText:
    """`llms-full.txt`, iterated in pieces: every page's copy in order (changelogs last) while they fit
    in `max_bytes`, then a note saying how many were left out (also in `left_out` once iterated)."""

    name: str
    summary: str
    pages: Iterable[PageText]
    max_bytes: int
    left_out: int = 0

    def __iter__(self) -> Iterator[str]:
        head = f"# {self.name}\n\n> {self.summary}\n"
        yield head
        written = len(head.encode())
        for page in _changelogs_last(self.pages):
            piece = "\n---\n\n" + page_copy(page)
            if self.left_out or written + len(piece.encode()) > self.max_bytes:
                self.left_out += 1
                continue
            written += len(piece.encode())
            yield piece
        if self.left_out:
            yield (
                f"\n---\n\n> Capped at {self.max_bytes:,} bytes: {self.left_out} more pages are not in this "
                "file; llms.txt lists them all, each with its own Markdown copy.\n"
            )
