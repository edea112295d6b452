"""Starlight (Astro): `astro.config.*` beside `src/content/docs/`. Pages are routed `a/b.md` ->
`a/b/`, `index` -> its folder, each path segment slugged (lower case, spaces to `-`); `slug`
front matter wins. `.mdx` pages are MDX; asides (`:::note[Title]`) are shared container markup."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.anchors import github
from pgcite.ingest.sites.base import Files, Site
from pgcite.ingest.sites.mdx import MdxPages

__all__ = ["Starlight"]

CONTENT = "src/content/docs"


class Starlight(MdxPages, Site):
    name = "starlight"
    markers = tuple(f"astro.config.{ext}" for ext in ("mjs", "ts", "js", "mts", "cjs"))
    pages = ("*.md", "*.mdx", "*.markdown", "*.mdoc")

    @classmethod
    def detect(cls, files: Files) -> bool:
        return super().detect(files) and files.exists(CONTENT)

    def __init__(self, files: Files) -> None:
        super().__init__(files)
        self.content_dirs = (CONTENT,)

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        slug = front_matter.get("slug")
        if isinstance(slug, str):
            return slug.strip("/") + "/" if slug.strip("/") else ""
        folder, name = posixpath.split(posixpath.relpath(site_path, CONTENT))
        stem = posixpath.splitext(name)[0]
        parts = [p for p in folder.split("/") if p and p != "."]
        if stem != "index":
            parts.append(stem)
        return "/".join(github(p) for p in parts) + "/" if parts else ""
