"""Docusaurus: docs in `docs/` (the version still in work, routed under `next/` once the site
has released versions), released versions in `versioned_docs/version-X/` listed newest first in
`versions.json`; the newest is served at the route base (`/docs/`) and is what search answers
from by default. `docusaurus.config.*` is code, so its documented defaults hold (route base
`docs`); `--route-base` overrides. Routes follow the docs plugin: `slug` and `id` front matter,
number prefixes stripped, `index`, `README` and a file named like its folder route to the folder.
Files and folders starting with `_` are partials, never pages."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.sites.base import Files, Includes, Site
from pgcite.ingest.sites.mdx import MDX, prepare_mdx

__all__ = ["NEXT", "Docusaurus"]

NEXT = "next"  # the version label of docs/ when the site has released versions
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?P<rest>.*)$")
_NOT_A_PREFIX = re.compile(r"^(?:(?:\d{2}|\d{4})[-_.]\d{2}(?:[-_.](?:\d{2}|\d{4}))?|\d+[-_.]\d+)")  # dates, versions


def strip_number_prefix(name: str) -> str:
    """`01-intro` -> `intro`, but `2021-08-26-post` and `1.2-notes` stay (the docs plugin's rule)."""
    if _NOT_A_PREFIX.match(name):
        return name
    match = _NUMBER_PREFIX.match(name)
    return match["rest"] if match and match["rest"] else name


def _resolve(slug: str, folder: str) -> str:
    """A relative slug resolved against the folder's route, as URLs resolve (`..` climbs)."""
    parts = [p for p in folder.split("/") if p]
    for part in slug.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts) + ("/" if slug.endswith("/") else "")


class Docusaurus(Site):
    name = "docusaurus"
    dialect = MDX
    markers = tuple(f"docusaurus.config.{ext}" for ext in ("js", "ts", "mjs", "cjs", "mts", "cts"))
    pages = ("*.md", "*.mdx")
    partials = ("_*",)

    def __init__(self, files: Files, *, route_base: str | None = None) -> None:
        super().__init__(files)
        self.route_base = "docs" if route_base is None else route_base.strip("/")
        released = [v for v in self._listed_versions() if files.exists(f"versioned_docs/version-{v}")]
        self.versions = (*released, NEXT) if released else ()
        self.default_version = released[0] if released else ""
        self.content_dirs = ("docs", *(f"versioned_docs/version-{v}" for v in released))

    def _listed_versions(self) -> list[str]:
        try:
            data = json.loads(self.files.read("versions.json"))
        except (OSError, ValueError):
            return []
        return [str(v) for v in data] if isinstance(data, list) else []

    def _split(self, site_path: str) -> tuple[str, str]:
        """(version label, path inside that version's docs folder)."""
        if site_path.startswith("versioned_docs/version-"):
            folder, _, rest = site_path[len("versioned_docs/version-") :].partition("/")
            return folder, rest
        return (NEXT if self.versions else ""), posixpath.relpath(site_path, "docs")

    def version_of(self, site_path: str) -> str:
        return self._split(site_path)[0]

    def fallback_title(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        stem = posixpath.splitext(posixpath.basename(site_path))[0]
        return str(front_matter.get("id") or strip_number_prefix(stem))

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        version, path = self._split(site_path)
        folder, name = posixpath.split(path)
        stem = posixpath.splitext(name)[0]
        folder_route = "/".join(strip_number_prefix(part) for part in folder.split("/") if part)
        slug = front_matter.get("slug")
        slug = str(slug) if isinstance(slug, (str, int, float)) and str(slug) else None
        parent = folder_route.rsplit("/", 1)[-1].lower()
        if slug is not None and slug.startswith("/"):
            doc_route = slug
        elif slug is None and (
            stem.lower() in ("index", "readme") or (parent and strip_number_prefix(stem).lower() == parent)
        ):
            doc_route = _resolve(folder_route + "/", "")  # a category index: the folder itself
        else:
            base_id = str(front_matter.get("id") or strip_number_prefix(stem))
            doc_route = _resolve(slug if slug is not None else base_id, folder_route)
        version_route = "" if version in ("", self.default_version) else version
        prefix = "/".join(part for part in (self.route_base, version_route) if part)
        route = posixpath.join(prefix, doc_route.lstrip("/")) if doc_route != "/" else prefix + "/"
        return route.lstrip("/")

    def prepare(self, body: str, includes: Includes) -> str:
        return prepare_mdx(body, includes)
