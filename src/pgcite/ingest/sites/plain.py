"""A folder of Markdown that no generator claims, as GitHub shows it: each page links to its own
file (`--base-url https://github.com/org/repo/blob/main/docs/`), anchors by GitHub's rule, and
`.mdx` pages read as MDX."""

from __future__ import annotations

from pgcite.ingest.sites.base import Site
from pgcite.ingest.sites.mdx import MdxPages

__all__ = ["Plain"]


class Plain(MdxPages, Site):
    name = "plain"
    pages = ("*.md", "*.markdown", "*.mdx")
