"""Characters written as markup in prose: HTML entities (`&nbsp;`, `&mdash;`, `&#39;`) and emoji
shortcodes (`:heavy_check_mark:`: Hugo's enableEmoji, pymdownx.emoji, GitHub, VitePress), turned
into the characters a reader sees. Callers keep code out of reach (markup.protect_code_spans).

An entity is decoded only when what it stands for cannot form Markdown or HTML: `&lt;div&gt;`
decoded would be a tag the cleaning strips or a reader's renderer runs, `&#124;` a table's cell
border, `&#42;` emphasis; those stay as written, as their source meant them to read literally.
"""

from __future__ import annotations

import functools
import html
import re

import emoji

from pgcite.safety import visible

__all__ = [
    "ENTITY",
    "SHORTCODE",
    "decodable_entity",
    "decode_emoji",
    "decode_entities",
    "emoji_shortcode",
    "shortcode_names",
]

# CommonMark's entity and numeric character references; a backslash before `&` makes it literal.
ENTITY = re.compile(r"(?<!\\)&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_NBSP = "\xa0"
_SOFT_HYPHEN = "\xad"
# Headings keep their markup as written: their text reaches no chunk (the breadcrumb is read by
# markdown-it, which decodes entities itself) and their anchors are slugged from it.
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_SAFE_ASCII = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'")


def decodable_entity(reference: str) -> str | None:
    """What the entity `reference` (`&mdash;`) reads as, or None when it names nothing or
    stands for ASCII punctuation, a control character or an invalid code point. An invisible
    character (`&#8203;`, a soft hyphen `&shy;`) reads as nothing: kept, it would split a word
    for search, and `safety.visible` drops the former when written as is."""
    decoded = html.unescape(reference)
    if decoded == reference or not decoded:
        return None
    safe = all(c in _SAFE_ASCII or (ord(c) > 127 and c != "\ufffd") for c in decoded)
    return visible(decoded).replace(_SOFT_HYPHEN, "") if safe else None


# A run of no-break spaces opening a line: as spaces it would be indentation (four make code), and
# in a table's first cell (`&nbsp;|A|B`, Hugo's empty corner) it would leave the row a cell short.
_LEADING_NBSP = re.compile(r"^([ \t]*)(?:&nbsp;|&#160;|&#[xX]0*[aA]0;)+([ \t]*\|)?")


def _decode_line(line: str) -> str:
    def replace(match: re.Match[str]) -> str:
        decoded = decodable_entity(match.group(0))
        if decoded is None:
            return match.group(0)
        return " " if decoded == _NBSP else decoded

    line = _LEADING_NBSP.sub(lambda m: m.group(1) + ("| |" if m.group(2) else ""), line, count=1)
    return ENTITY.sub(replace, line)


def decode_entities(text: str) -> str:
    """`text` with its decodable entities decoded, a no-break space as a space (none is left
    opening a line: an empty table cell stays one)."""
    if "&" not in text:
        return text
    return "\n".join(line if _HEADING.match(line) else _decode_line(line) for line in text.split("\n"))


# Shortcodes stand alone, one or several in a row (`:a::b:`): `12:30:45`, `a:b:c` and `std::x:`
# hold none.
SHORTCODE = re.compile(r"(?<![A-Za-z0-9_\\/:])(?::[A-Za-z0-9_+-]+:)+(?![A-Za-z0-9_:])")
_NAME = re.compile(r":([A-Za-z0-9_+-]+):")


@functools.cache
def _emoji_names() -> dict[str, str]:
    """Every name the emoji library knows for an emoji (its English name and GitHub's aliases),
    read once: its own lookup scans the whole table for each name."""
    # The fully qualified form of each emoji (with its variation selector), as emojize writes it.
    table = sorted(emoji.EMOJI_DATA.items(), key=lambda item: item[1]["status"] == emoji.STATUS["fully_qualified"])
    aliases = {name: char for char, data in table for name in data.get("alias", ())}
    english = {data["en"]: char for char, data in table if data.get("en")}
    return english | aliases  # GitHub's `:cat:` is 🐱, as emojize(language="alias") reads it


def emoji_shortcode(name: str) -> str | None:
    """The emoji `:name:` stands for (GitHub's and the emoji library's aliases), or None."""
    return _emoji_names().get(f":{name}:")


def shortcode_names(run: str) -> list[str]:
    """The names in a run of shortcodes that SHORTCODE found (`:a::b:` -> ["a", "b"])."""
    return _NAME.findall(run)


def decode_emoji(text: str) -> str:
    """`text` with known emoji shortcodes decoded; `:ref:` or `:foo:` stay."""

    def replace(match: re.Match[str]) -> str:
        return _NAME.sub(lambda m: emoji_shortcode(m.group(1)) or m.group(0), match.group(0))

    if ":" not in text:
        return text
    return "\n".join(line if _HEADING.match(line) else SHORTCODE.sub(replace, line) for line in text.split("\n"))
