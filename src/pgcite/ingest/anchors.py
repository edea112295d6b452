"""Heading anchors, computed as each site generator computes them, so a citation's link lands
on its section: the slug of the heading's text, and the suffix that tells repeated headings
apart. An explicit `{#id}` on a heading wins over both (markdown.py)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "GITHUB",
    "MDBOOK",
    "PYTHON_MARKDOWN",
    "VITEPRESS",
    "AnchorRule",
    "github",
    "mdbook",
    "python_markdown",
    "vitepress",
]

_COMBINING = re.compile("[\u0300-\u036f]")
_CONTROL = re.compile("[\u0000-\u001f]")
_SPECIAL = re.compile(r"[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'\u201c\u201d\u2018\u2019<>,.?/]+")


def vitepress(heading: str) -> str:
    """@mdit-vue/shared `slugify`, which VitePress uses."""
    slug = unicodedata.normalize("NFKD", heading)
    slug = _COMBINING.sub("", slug)
    slug = _CONTROL.sub("", slug)
    slug = _SPECIAL.sub("-", slug)
    slug = re.sub(r"-{2,}", "-", slug).strip("-")
    slug = re.sub(r"^(\d)", r"_\1", slug)
    return slug.lower()


def github(heading: str) -> str:
    """github-slugger (Docusaurus, Starlight, Hugo's default, GitHub itself): lower case, every
    character that is not a letter, digit, mark, `-`, `_` or space removed, spaces to `-`."""
    kept = (ch for ch in heading.lower() if ch.isalnum() or ch in "-_ " or unicodedata.category(ch).startswith("M"))
    return "".join(kept).replace(" ", "-")


def python_markdown(heading: str) -> str:
    """Python-Markdown's toc `slugify` (MkDocs): ASCII only, punctuation removed, runs of
    spaces and dashes to one `-`."""
    ascii_text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^\w\s-]", "", ascii_text).strip().lower()
    return re.sub(r"[-\s]+", "-", slug)


def mdbook(heading: str) -> str:
    """mdBook's `normalize_id`: letters, digits, `_` and `-` kept (lower case), whitespace to `-`."""
    return "".join(
        ch.lower() if ch.isalnum() or ch in "_-" else "-"
        for ch in heading
        if ch.isalnum() or ch in "_-" or ch.isspace()
    )


def _dash_numbered(slug: str, used: set[str]) -> str:
    """foo, foo-1, foo-2 (markdown-it-anchor, github-slugger, mdBook)."""
    candidate, i = slug, 1
    while candidate in used:
        candidate, i = f"{slug}-{i}", i + 1
    used.add(candidate)
    return candidate


def _underscore_numbered(slug: str, used: set[str]) -> str:
    """foo, foo_1, foo_2 (Python-Markdown's toc)."""
    candidate, i = slug, 1
    while candidate in used or not candidate:
        candidate, i = f"{slug}_{i}", i + 1
    used.add(candidate)
    return candidate


@dataclass(frozen=True)
class AnchorRule:
    slugify: Callable[[str], str]
    unique: Callable[[str, set[str]], str]


VITEPRESS = AnchorRule(vitepress, _dash_numbered)
GITHUB = AnchorRule(github, _dash_numbered)
PYTHON_MARKDOWN = AnchorRule(python_markdown, _underscore_numbered)
MDBOOK = AnchorRule(mdbook, _dash_numbered)
