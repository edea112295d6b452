"""The links of an ingested source, as pgcite built its URLs: which page each link between pages
leads to, and whether that page and its `#anchor` exist. `pgcite review` compares two versions:
a link the change breaks, and a URL the answer log cited that no longer leads anywhere."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from pgcite.ingest.sites.leftovers import prose
from pgcite.store import Store

__all__ = ["BrokenLink", "SiteLinks", "read_links"]

_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]*)\]\((?P<target><[^>\n]*>|[^)\s]+)(?:\s+[\"'][^\n]*?[\"'])?\)")
_PAGE_FILE = re.compile(r"\.(?:md|mdx|markdown)$", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


@dataclass(frozen=True)
class BrokenLink:
    path: str  # the page the link is on
    heading: str  # where on it: "Page > Heading"
    target: str  # as written
    why: str  # "no page", "no anchor #x on page y"


@dataclass
class SiteLinks:
    base_url: str
    pages: dict[str, str] = field(default_factory=dict)  # source path -> its URL, no anchor
    anchors: dict[str, set[str]] = field(default_factory=dict)  # source path -> its sections' anchors
    links: list[tuple[str, str, str]] = field(default_factory=list)  # (path, heading, target) between pages

    def _by_url(self) -> dict[str, str]:
        return {_plain(url): path for path, url in self.pages.items() if url}

    def resolve(self, url: str) -> str | None:
        """Why an absolute URL of this site leads nowhere ("" when it leads to a page and anchor)."""
        page, _, anchor = url.partition("#")
        path = self._by_url().get(_plain(page))
        if path is None:
            return "no page"
        return "" if not anchor or unquote(anchor) in self.anchors.get(path, set()) else f"no anchor #{anchor}"

    def broken(self) -> list[BrokenLink]:
        """Links between pages whose page or anchor does not exist."""
        by_url, found = self._by_url(), []
        for path, heading, target in self.links:
            written, _, anchor = target.strip("<>").partition("#")
            if not written:
                target_path: str | None = path  # "#anchor": this page
            elif _SCHEME.match(written):  # this site's own absolute URL
                target_path = by_url.get(_plain(written))
            elif _PAGE_FILE.search(written.split("?")[0]):  # a file: relative to this one's folder
                joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), unquote(written.split("?")[0])))
                target_path = joined if joined in self.pages else None
            else:  # a route: relative to this page's URL
                here = self.pages.get(path, "")
                absolute = _join(here, written) if here else ""
                target_path = by_url.get(_plain(absolute)) if absolute else None
                if target_path is None and not here:
                    continue  # no base URL: a route cannot be followed
            if target_path is None:
                found.append(BrokenLink(path, heading, target, "no page"))
            elif anchor and unquote(anchor) not in self.anchors.get(target_path, set()):
                found.append(BrokenLink(path, heading, target, f"no anchor #{anchor} on {target_path}"))
        return found


def _plain(url: str) -> str:
    """A page URL compared loosely: no trailing slash, no `.html`, no `index`."""
    url = url.split("#")[0].split("?")[0].rstrip("/")
    for suffix in ("/index.html", ".html", "/index"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def _join(base: str, target: str) -> str:
    if target.startswith("/"):
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}{target}"
    return posixpath.normpath(posixpath.join(base if base.endswith("/") else posixpath.dirname(base), target))


def _internal(target: str, base_url: str) -> bool:
    """A link to a page of this site: relative, rooted, or under its base URL (not mailto:, not elsewhere)."""
    bare = target.strip("<>")
    if _SCHEME.match(bare) or bare.startswith("//"):
        return bool(base_url) and bare.startswith(base_url)
    return bool(bare) and not _is_asset(bare)


def _is_asset(target: str) -> bool:
    name = target.split("#")[0].split("?")[0]
    extension = posixpath.splitext(name)[1].lower()
    return extension not in ("", ".md", ".mdx", ".markdown", ".html", ".htm")


def read_links(store: Store, source: str, base_url: str) -> SiteLinks:
    """The pages, anchors and links between pages of a stored source."""
    site = SiteLinks(base_url)
    for path, url in store.conn.execute("SELECT path, url FROM documents WHERE source = %s", (source,)):
        site.pages[path] = url
        site.anchors.setdefault(path, set())
    rows = store.conn.execute(
        "SELECT path, anchor, breadcrumb, content FROM chunks WHERE source = %s ORDER BY path, ord", (source,)
    )
    for path, anchor, breadcrumb, content in rows:
        if anchor:
            site.anchors.setdefault(path, set()).add(anchor)
        for match in _LINK.finditer(prose(content)):
            if _internal(match["target"], base_url):
                site.links.append((path, breadcrumb, match["target"]))
    return site
