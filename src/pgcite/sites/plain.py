"""A folder of Markdown that no generator claims, as GitHub shows it: each page links to its own
file (`--base-url https://github.com/org/repo/blob/main/docs/`), anchors by GitHub's rule, and
`.mdx` pages read as MDX."""

from __future__ import annotations

from .base import Site
from .mdx import MdxPages

__all__ = ["Plain"]


class Plain(MdxPages, Site):
    name = "plain"
    pages = ("*.md", "*.markdown", "*.mdx")
