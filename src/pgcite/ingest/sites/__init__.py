"""Site generators as a layer of their own: which files of a folder are pages, how each
generator's markup becomes Markdown, how its pages are routed and anchored, and which versions
it holds. `detect` finds the generator from the folder the user points at (or the site above
its docs folder); the rest of the pipeline is shared."""

from __future__ import annotations

import posixpath

from pgcite.errors import SourceError
from pgcite.ingest.crawl import WebSource
from pgcite.ingest.folder import FolderSource
from pgcite.ingest.sites.api_reference import ApiReference, Redoc
from pgcite.ingest.sites.base import Files, Page, Site, join_url
from pgcite.ingest.sites.docusaurus import Docusaurus
from pgcite.ingest.sites.html import PublishedHtml
from pgcite.ingest.sites.hugo import Hugo
from pgcite.ingest.sites.mdbook import MdBook
from pgcite.ingest.sites.mkdocs import MkDocs
from pgcite.ingest.sites.plain import Plain
from pgcite.ingest.sites.sphinx import Sphinx
from pgcite.ingest.sites.starlight import Starlight
from pgcite.ingest.sites.vitepress import VitePress
from pgcite.ingest.sources import Source

__all__ = ["SITES", "Page", "Site", "detect", "join_url", "levels_above"]

_GENERATORS = (VitePress, MkDocs, Docusaurus, MdBook, Hugo, Starlight, Sphinx)
# Redoc after ApiReference: found by the same files, it is read only when named.
SITES: dict[str, type[Site]] = {cls.name: cls for cls in (*_GENERATORS, ApiReference, Redoc, PublishedHtml, Plain)}
# How far above the ingested folder a site's configuration is looked for ("docs/en/docs" -> "docs/en");
# further for generators whose pages lie deeper (Starlight's src/content/docs/fr, Docusaurus's
# i18n/fr/docusaurus-plugin-content-docs/current/guides): a generator's `levels` says.
SITE_LEVELS = 2


def _make(cls: type[Site], files: Files, route_base: str | None, sphinx_builder: str | None) -> Site:
    if cls is Docusaurus:
        return cls(files, route_base=route_base)
    return cls(files, builder=sphinx_builder) if cls is Sphinx else cls(files)


def detect(
    source: Source, forced: str | None = None, *, route_base: str | None = None, sphinx_builder: str | None = None
) -> Site:
    """The generator of the site `source` holds: from the markers in its root, or in the folders
    above it (a folder source pointed at the docs folder inside a site); `forced` names one.
    sphinx_builder: how a Sphinx site is built (`html`, `dirhtml`), for no other site."""
    site = _detect(source, forced, route_base, sphinx_builder)
    if sphinx_builder is not None and not isinstance(site, Sphinx):
        raise SourceError(
            f"--sphinx-builder is for a Sphinx site; {source.location} is read as a {site.name} site: leave it out"
        )
    return site


def _detect(source: Source, forced: str | None, route_base: str | None, sphinx_builder: str | None) -> Site:
    if forced is not None and forced not in SITES:
        raise SourceError(f"unknown site generator {forced!r}; use one of {', '.join(SITES)}")
    if isinstance(source, WebSource):  # a site read as it is served
        if forced not in (None, PublishedHtml.name):
            raise SourceError(f"{source.location} is read as published HTML: leave out --site {forced}")
        published = PublishedHtml(Files(source))
        published.base_url = source.root
        return published
    folder = source if isinstance(source, FolderSource) else None
    if folder and folder.single:
        if forced not in (None, ApiReference.name, Redoc.name):
            raise SourceError(f"{source.location} is one file, read as an OpenAPI document: leave out --site {forced}")
        return (Redoc if forced == Redoc.name else ApiReference)(Files(source), folder.single)
    candidates = [cls for cls in SITES.values() if cls is not Plain and forced in (None, cls.name)]
    levels = max((_levels(cls) for cls in candidates), default=0) if folder else 0
    for up in range(min(levels, _depth(source)) + 1):
        files = Files(source, _prefix(source, up))
        for cls in candidates:
            if up <= _levels(cls) and cls.detect(files):
                bound = folder.include_root if folder else ""
                if up and folder:
                    folder.allow("/".join([".."] * up))  # its configuration and includes are the site's
                site = _make(cls, files, route_base, sphinx_builder)
                if site.covers():
                    return site
                if folder:
                    folder.include_root = bound  # not this site's pages: its folders stay out of reach
    if forced is not None and forced != "plain":
        return _make(SITES[forced], Files(source), route_base, sphinx_builder)
    return Plain(Files(source))


def levels_above(folder: str, forced: str | None = None) -> int:
    """How many folders above `folder` its site's root lies (0: the folder is the site, or no site
    above it): what must come along when the folder is read from somewhere else."""
    prefix = detect(FolderSource(folder), forced).files.prefix
    return prefix.count("/") + 1 if prefix else 0


def _levels(cls: type[Site]) -> int:
    return int(getattr(cls, "levels", SITE_LEVELS))


def _depth(source: Source) -> int:
    """How many folders lie above a folder source (none above the file system's root)."""
    return len([p for p in posixpath.normpath(source.root).split("/") if p]) if isinstance(source, FolderSource) else 0


def _prefix(source: Source, up: int) -> str:
    """The ingested folder's path seen from `up` levels above it."""
    if not up:
        return ""
    assert isinstance(source, FolderSource)  # only a folder has folders above it
    return "/".join(posixpath.normpath(source.root).split("/")[-up:])
