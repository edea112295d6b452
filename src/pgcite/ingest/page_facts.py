"""What the crawler reads from a page before the html site reads its content: its canonical URL,
the links it makes, its language, and whether it holds any text as served (a page drawn by
scripts in the browser holds none)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin

from bs4 import BeautifulSoup, NavigableString, Tag

__all__ = ["PageFacts", "holds_text", "page_facts"]

_NOT_TEXT = {"script", "style", "noscript", "template", "svg", "head", "title"}
_NOT_LINKS = ("javascript:", "mailto:", "tel:", "data:", "#")
MIN_WORDS = 3  # fewer words than this outside scripts: the page is drawn by them


@dataclass(frozen=True)
class PageFacts:
    canonical: str  # "" when the page names none
    links: list[str]  # absolute, without fragments
    language: str  # lower case, "" when the page does not say


def page_facts(html: str, url: str) -> PageFacts:
    soup = BeautifulSoup(html, "html.parser")
    canonical = ""
    link = soup.find("link", rel="canonical")
    if isinstance(link, Tag) and link.get("href"):
        canonical = urldefrag(urljoin(url, str(link["href"])))[0]
    links = []
    for anchor in soup.find_all("a", href=True):
        href = str(anchor["href"]).strip()
        if href and not href.lower().startswith(_NOT_LINKS):
            links.append(urldefrag(urljoin(url, href))[0])
    root = soup.find("html")
    language = str(root.get("lang") or "").lower() if isinstance(root, Tag) else ""
    return PageFacts(canonical, links, language)


def holds_text(html: str) -> bool:
    """Whether the page as served has words outside its scripts (asked of the start page only)."""
    words = 0
    for text in BeautifulSoup(html, "html.parser").find_all(string=True):
        if isinstance(text, NavigableString) and not any(p.name in _NOT_TEXT for p in text.parents):
            words += len(text.split())
            if words >= MIN_WORDS:
                return True
    return False
