"""Generator markup that should never reach a chunk: the check behind bench/markup_check.py and
the corpus tests (GitHub alert markers, reference links left unresolved, entities and emoji
shortcodes that cleaning decodes included). Code is left out first (fenced blocks and inline
spans may show markup on purpose, as a page about admonitions does); what remains is prose a
reader would see."""

from __future__ import annotations

import re
from collections.abc import Callable

from pgcite.ingest import markup
from pgcite.ingest.characters import ENTITY, SHORTCODE, decodable_entity, emoji_shortcode, shortcode_names
from pgcite.ingest.tags import is_markup

__all__ = ["PATTERNS", "leftovers"]

PATTERNS: dict[str, re.Pattern[str]] = {
    "html or jsx tag": re.compile(r"</?[A-Za-z][\w.-]*(?:\s[^<>]*)?/?>"),
    "html comment": re.compile(r"<!--|-->"),
    "mdx import/export": re.compile(
        r"^\s*(?:import\s+[\w{*][^\n]*\bfrom\s+['\"]|export\s+(?:default|const|function)\b)", re.MULTILINE
    ),
    "mdx comment or expression": re.compile(r"\{/\*|\{props\.|\{\s*[A-Za-z_$][\w$.]*\s*\}"),
    "container fence": re.compile(r"^\s*:::", re.MULTILINE),
    "mkdocs block": re.compile(r"^\s*(?:/{3,}(?:\s|$)|!!!\s|\?\?\?\+?\s|===\+?\s+\")", re.MULTILINE),
    "attribute list": re.compile(r"\{:?\s*[#.][\w:.-]+[^{}\n]*\}"),
    "include directive": re.compile(
        r"\{\*\s|\{!|--8<--|^\s*<<<\s|\{\{#(?:include|rustdoc_include|playground)", re.MULTILINE
    ),
    "template or shortcode": re.compile(r"\{\{[<%]|\{%|\{\{\s*[\w.$]+\s*\}\}"),
    "table of contents placeholder": re.compile(r"\[\[toc\]\]|^\s*\[TOC\]\s*$", re.MULTILINE | re.IGNORECASE),
    "alert marker": re.compile(r"^[ \t]*(?:>[ \t]*)+\[![A-Za-z]+\]", re.MULTILINE),
    # `[text][ref]` or `[text][]` left as written (a shortcut `[text]` cannot be told from brackets
    # in text, nor `matrix[i][j]` from a link).
    "reference link": re.compile(r"(?<![A-Za-z0-9_\\\]])\[[^\[\]\n]+\]\[[^\[\]\n]*\]"),
    "html entity": ENTITY,
    "emoji shortcode": SHORTCODE,
}
# Kinds whose pattern finds candidates that a check on the match confirms.
_CONFIRM: dict[str, Callable[[re.Match[str]], bool]] = {
    "html entity": lambda match: decodable_entity(match.group(0)) is not None,
    "emoji shortcode": lambda match: any(emoji_shortcode(name) for name in shortcode_names(match.group(0))),
}

_TAG_NAME = re.compile(r"</?([A-Za-z][\w.-]*)(?:\s[^<>]*)?/?>")
_FENCED = re.compile(r"^[ \t>]*(`{3,}|~{3,}).*?^[ \t>]*\1[ \t]*$", re.DOTALL | re.MULTILINE)


def prose(text: str) -> str:
    """`text` without fenced code blocks and inline code spans."""
    text = _FENCED.sub("", text)
    protected, _ = markup.protect_code_spans(text)
    return re.sub("\ue000\\d+\ue001", "", protected)


def leftovers(text: str, *, heading: bool = False, mdx: bool = True) -> list[str]:
    """The kinds of generator markup left in `text`'s prose, one name each. A heading (or
    breadcrumb) is plain text whose inline code lost its backticks, so only attribute lists and
    block syntax count there. A lowercase tag that is no HTML element (<thinking>) is text; so is
    `{name}` outside MDX (mdBook's "where {path} will be replaced", MathJax's `\frac{1}{N}`)."""
    prose_text = text if heading else prose(text)
    names = ["attribute list", "mkdocs block", "container fence", "html comment"] if heading else list(PATTERNS)
    if not mdx and not heading:
        names.remove("mdx comment or expression")
    confirm = _CONFIRM.get
    found = [name for name in names if any(confirm(name, bool)(m) for m in PATTERNS[name].finditer(prose_text))]
    if "html or jsx tag" in found and not any(is_markup(m.group(1), jsx=False) for m in _TAG_NAME.finditer(prose_text)):
        found.remove("html or jsx tag")
    return found
