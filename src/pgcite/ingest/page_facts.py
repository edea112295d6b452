"""What the crawler reads from a page before the html site reads its content: its text in the
charset it declares, its canonical URL, the links it makes (and those that are not addresses at
all), its language, and whether it holds any text as served (a page drawn by scripts in the browser
holds none)."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin

from bs4 import BeautifulSoup, NavigableString, Tag

__all__ = ["PageFacts", "absolute", "as_utf8", "holds_text", "page_facts"]

_NOT_TEXT = {"script", "style", "noscript", "template", "svg", "head", "title"}
_NOT_LINKS = ("javascript:", "mailto:", "tel:", "data:", "#")
MIN_WORDS = 3  # fewer words than this outside scripts: the page is drawn by them
_PRESCAN = 1024  # where a browser looks for <meta charset> (the HTML standard's prescan)
_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
# Python's codecs that no browser reads a page in: escapes and transforms, not charsets
_NOT_CHARSETS = {"utf-7", "unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined"}
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\"';\s]+)", re.IGNORECASE)


@dataclass(frozen=True)
class PageFacts:
    canonical: str  # "" when the page names none
    links: list[str]  # absolute, without fragments
    language: str  # lower case, "" when the page does not say
    # (href, why) of the links that are no address at all (`http://[bad`): not followed
    malformed: list[tuple[str, str]] = field(default_factory=list)


def absolute(base: str, href: str) -> str:
    """`href` as an absolute URL without its fragment; ValueError when it is no address (urljoin
    and urlsplit refuse `http://[bad`, an unclosed IPv6 host, and ports that are no number)."""
    return urldefrag(urljoin(base, href))[0]


def page_facts(html: str, url: str) -> PageFacts:
    soup = BeautifulSoup(html, "html.parser")
    canonical = ""
    malformed: list[tuple[str, str]] = []
    link = soup.find("link", rel="canonical")
    if isinstance(link, Tag) and link.get("href"):
        try:
            canonical = absolute(url, str(link["href"]).strip())
        except ValueError as err:
            malformed.append((str(link["href"]), str(err)))
    links = []
    for anchor in soup.find_all("a", href=True):
        href = str(anchor["href"]).strip()
        if href and not href.lower().startswith(_NOT_LINKS):
            try:
                links.append(absolute(url, href))
            except ValueError as err:
                malformed.append((href, str(err)))
    root = soup.find("html")
    language = str(root.get("lang") or "").lower() if isinstance(root, Tag) else ""
    return PageFacts(canonical, links, language, malformed)


def as_utf8(raw: bytes, content_type: str) -> bytes:
    """A page's bytes as UTF-8, read in the charset it declares: a byte order mark, else the
    Content-Type header's `charset`, else `<meta charset>` (or `http-equiv`) in its first 1 KB,
    else UTF-8, the first of these that reads it. Bytes none reads are returned as they are (and
    the caller says they are not UTF-8)."""
    candidates: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        candidates.append("utf-8-sig")
    elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        candidates.append("utf-16")
    if header := _HEADER_CHARSET.search(content_type):
        candidates.append(header.group(1))
    if meta := _META_CHARSET.search(raw[:_PRESCAN]):
        # a page whose <meta> could be read as ASCII is not UTF-16, whatever it says (as browsers read it)
        name = meta.group(1).decode("ascii")
        candidates.append("utf-8" if name.lower().startswith("utf-16") else name)
    for name in candidates:
        try:
            codec = codecs.lookup(name).name
        except LookupError:
            continue  # a charset Python does not know: the next one is tried
        if codec == "utf-8":
            break  # UTF-8 bytes are returned as they are
        if codec in _NOT_CHARSETS:
            continue
        try:
            return raw.decode(codec).encode("utf-8")
        except (UnicodeError, LookupError):  # bytes it does not read; a codec that is no text encoding (rot13)
            continue
    return raw


def holds_text(html: str) -> bool:
    """Whether the page as served has words outside its scripts (asked of the start page only)."""
    words = 0
    for text in BeautifulSoup(html, "html.parser").find_all(string=True):
        if isinstance(text, NavigableString) and not any(p.name in _NOT_TEXT for p in text.parents):
            words += len(text.split())
            if words >= MIN_WORDS:
                return True
    return False
