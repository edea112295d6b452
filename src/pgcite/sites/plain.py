"""A folder of Markdown that no generator claims, as GitHub shows it: each page links to its own
file (`--base-url https://github.com/org/repo/blob/main/docs/`), anchors by GitHub's rule, and
`.mdx` pages read as MDX."""

from __future__ import annotations

from ..markdown import Dialect
from .base import Includes, Site
from .mdx import MDX, prepare_mdx

__all__ = ["Plain"]


class Plain(Site):
    name = "plain"
    pages = ("*.md", "*.markdown", "*.mdx")

    def dialect_for(self, site_path: str) -> Dialect:
        return MDX if site_path.lower().endswith(".mdx") else self.dialect

    def prepare(self, body: str, includes: Includes) -> str:
        return prepare_mdx(body, includes) if includes.page.lower().endswith(".mdx") else body
