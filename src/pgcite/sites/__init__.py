"""Site generators as a layer of their own: which files of a folder are pages, how each
generator's markup becomes Markdown, how its pages are routed and anchored, and which versions
it holds. `detect` finds the generator from the folder the user points at (or the site above
its docs folder); the rest of the pipeline is shared."""

from __future__ import annotations

import posixpath

from ..errors import SourceError
from ..sources import FolderSource, Source
from .base import Files, Page, Site, join_url
from .docusaurus import Docusaurus
from .hugo import Hugo
from .mdbook import MdBook
from .mkdocs import MkDocs
from .plain import Plain
from .starlight import Starlight
from .vitepress import VitePress

__all__ = ["SITES", "Page", "Site", "detect", "join_url"]

SITES: dict[str, type[Site]] = {
    cls.name: cls for cls in (VitePress, MkDocs, Docusaurus, MdBook, Hugo, Starlight, Plain)
}
# How far above the ingested folder a site's configuration is looked for ("docs/en/docs" -> "docs/en").
SITE_LEVELS = 2


def _make(cls: type[Site], files: Files, route_base: str | None) -> Site:
    return cls(files, route_base=route_base) if cls is Docusaurus else cls(files)


def detect(source: Source, forced: str | None = None, *, route_base: str | None = None) -> Site:
    """The generator of the site `source` holds: from the markers in its root, or in the folders
    above it (a folder source pointed at the docs folder inside a site); `forced` names one."""
    if forced is not None and forced not in SITES:
        raise SourceError(f"unknown site generator {forced!r}; use one of {', '.join(SITES)}")
    levels = SITE_LEVELS if isinstance(source, FolderSource) else 0
    candidates = [cls for cls in SITES.values() if cls is not Plain and forced in (None, cls.name)]
    for up in range(levels + 1):
        files = Files(source, _prefix(source, up))
        for cls in candidates:
            if cls.detect(files):
                if up:
                    source.allow("/".join([".."] * up))  # its configuration and includes are the site's
                site = _make(cls, files, route_base)
                if site.covers():
                    return site
    if forced is not None and forced != "plain":
        return _make(SITES[forced], Files(source), route_base)
    return Plain(Files(source))


def _prefix(source: Source, up: int) -> str:
    """The ingested folder's path seen from `up` levels above it."""
    if not up:
        return ""
    assert isinstance(source, FolderSource)  # only a folder has folders above it
    return "/".join(posixpath.normpath(source.root).split("/")[-up:])
