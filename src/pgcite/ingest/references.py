"""Reference-style links (`[text][ref]`, `[text][]`, `[text]` with `[ref]: url "title"` anywhere in
the page) resolved at page level into inline links `[text](url)`, so a chunk keeps its link after
the definitions at the bottom of the page are split off into another chunk.

Definitions are the ones markdown-it itself finds (env["references"]: CommonMark's rules, labels
case-folded and whitespace-collapsed); only their uses are found here, in prose whose code spans
are already out of reach (markup.protect_code_spans). Footnotes (`[^1]: ...`) are not links.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from markdown_it.common.utils import normalizeReference

__all__ = ["References", "definition_lines", "references_of", "resolve_references"]

References = Mapping[str, str]  # normalised label -> href

# Link text: brackets may nest one level deep (`[![badge](img.svg)][ref]`), escapes are kept.
_TEXT = r"\[(?P<text>(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\]){0,500}?)\]"
_USE = re.compile(
    rf"(?<![\\\]])(?P<bang>!?){_TEXT}(?:\[(?P<label>(?:[^\[\]\\]|\\.){{0,999}})\]|(?![\[(]))",
    re.DOTALL,
)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_WORD = re.compile(r"[A-Za-z0-9_]")  # before brackets: `matrix[i][]` is an index, not a link


def _footnote(label: str) -> bool:
    return label.startswith("^")


def references_of(env: Mapping[str, Any]) -> dict[str, str]:
    """label -> href of the definitions markdown-it found while parsing the page (`env`)."""
    found = env.get("references", {})
    return {label: entry["href"] for label, entry in found.items() if not _footnote(label)}


def definition_lines(env: Mapping[str, Any]) -> set[int]:
    """The 0-based line numbers that hold link definitions (repeated ones too: the first wins,
    but a reader sees none of them)."""
    entries = [(label, entry) for label, entry in env.get("references", {}).items()]
    entries += [(entry["label"], entry) for entry in env.get("duplicate_refs", [])]
    return {
        line
        for label, entry in entries
        if not _footnote(label) and entry.get("map")
        for line in range(entry["map"][0], entry["map"][1])
    }


def _destination(href: str) -> str:
    """`href` as an inline link's destination: markdown-it already percent-encoded spaces and
    non-ASCII; parentheses are encoded only when unbalanced, which would end the link early."""
    if href.count("(") != href.count(")"):
        href = href.replace("(", "%28").replace(")", "%29")
    return href


def resolve_references(text: str, references: References, restore: Callable[[str], str] = str) -> str:
    """`text` with every use of a defined reference turned into an inline link. `restore` puts
    back what placeholders hide (code spans), so a label like `` [`--flag`][] `` is read as written.
    A collapsed `[text][]` whose label has no definition is left as its text: the brackets a
    page shows there are markup gone wrong, and hold nothing. `[a][b]` or `[text]` with no
    definition may be text in brackets (`[1][2]`), and stays."""

    def replace(match: re.Match[str]) -> str:
        bang, content, label = match.group("bang"), match.group("text"), match.group("label")
        if _BLANK_LINE.search(content):
            return match.group(0)  # a link never spans paragraphs
        key = normalizeReference(restore(label or content))
        if not key or _footnote(key) or _footnote(content):
            return match.group(0)
        if key in references:
            # An empty destination (`[x]: <>`) leads nowhere: the reader has the text alone.
            href = references[key]
            return f"{bang}[{content}]({_destination(href)})" if href else content
        after_word = match.start() > 0 and _WORD.match(text, match.start() - 1) is not None
        return content if label == "" and not after_word else match.group(0)

    return _USE.sub(replace, text)
