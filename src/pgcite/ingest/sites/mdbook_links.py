"""mdBook's `links` preprocessor, as its source does it (mdbook-driver builtin_preprocessors/links.rs):
on the raw text of a chapter, code included, `{{#include}}`, `{{#rustdoc_include}}` and
`{{#playground}}` read files in, `{{#title}}` names the page, and `\\{{#...}}` is that text, unread."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pgcite.ingest.sites.base import Includes, code_fence

__all__ = ["Expanded", "expand"]

# links.rs `find_links`: an escaped link runs to the last `}}` of its line (`.` stops at a newline);
# a link allows spaces after `{{` and needs some before its target. `template` is mdbook-template's.
_LINK = re.compile(
    r"\\\{\{#[^\n]*\}\}"
    r"|\{\{\s*#(?P<kind>[a-zA-Z0-9_]+)\s+(?P<rest>[^}]+)\}\}"
)
_FILES = ("include", "rustdoc_include", "playground", "playpen")
_ANCHOR_START = re.compile(r"ANCHOR:\s*(?P<name>[\w-]+)")
_ANCHOR_END = re.compile(r"ANCHOR_END:\s*(?P<name>[\w-]+)")


@dataclass
class Expanded:
    text: str = ""
    title: str = ""  # the last `{{#title ...}}` met, in the page or its includes


def expand(body: str, includes: Includes, depth: int = 0, result: Expanded | None = None) -> Expanded:
    """`body` with its links replaced as mdBook replaces them. An include that cannot be read
    leaves nothing (and a line in the includes' problems)."""
    result = result or Expanded()
    out: list[str] = []
    pos = 0
    for match in _LINK.finditer(body):
        kind = match["kind"]
        if kind is not None and (kind not in (*_FILES, "title", "template") or not match["rest"].strip()):
            continue  # not a link mdBook knows (or one without a target): left as written
        out.append(body[pos : match.start()])
        pos = match.end()
        if kind is None:  # escaped: the text without its backslash
            out.append(match.group()[1:])
        elif kind == "title":
            result.title = match["rest"].strip()
        elif kind in _FILES:
            content = _read(kind, match["rest"], includes, depth, result)
            if content:
                # Each included line after the first starts with what preceded the link on its line.
                prefix = "".join(out).rsplit("\n", 1)[-1]
                out.append(("\n" + prefix).join(_lines(content)))
    out.append(body[pos:])
    result.text = "".join(out)
    return result


def _read(kind: str, rest: str, includes: Includes, depth: int, result: Expanded) -> str:
    path, _, selector = rest.split()[0].partition(":")
    site_path = includes.resolve(path)
    text = includes.read(site_path, depth, path)
    if text is None:
        return ""
    # rustdoc_include shows the chosen lines and hides the rest behind `#`: the reader sees those.
    # A playground is the file as a Rust block (attributes such as `editable` change no text).
    text = code_fence(text, "rust") if kind in ("playground", "playpen") else _take(text, selector)
    return expand(text, includes.at(site_path), depth + 1, result).text


def _take(text: str, selector: str) -> str:
    """links.rs `parse_range_or_anchor` and take_lines.rs: `2`, `2:10`, `:10`, `2:` (1-based,
    inclusive) or an anchor's lines without the anchor lines; no selector is the whole file."""
    lines = _lines(text)
    parts = selector.split(":", 2) if selector else []
    first = parts[0] if parts else ""
    start = _number(first)
    if first and start is None:
        return _anchored(lines, first)
    begin = max(start - 1, 0) if start is not None else 0
    if start is not None and len(parts) < 2:
        return "\n".join(lines[begin : begin + 1])
    return "\n".join(lines[begin : _number(parts[1]) if len(parts) > 1 else None])


def _number(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[0-9]+", text) else None


def _anchored(lines: list[str], name: str) -> str:
    kept: list[str] = []
    inside = False
    for line in lines:
        if inside:
            end = _ANCHOR_END.search(line)
            if end and end["name"] == name:
                break
            if not end and not _ANCHOR_START.search(line):
                kept.append(line)
        elif (start := _ANCHOR_START.search(line)) and start["name"] == name:
            inside = True
    return "\n".join(kept)


def _lines(text: str) -> list[str]:
    """Rust's `str::lines`: split at `\\n`, a trailing `\\r` dropped, no last empty line."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" and text.endswith("\n") else lines
