"""The titles Sphinx shows for a cross-reference written without one: `:doc:`install`` shows the
page's title, `:ref:`label`` the title of the section under `.. _label:` (or MyST's `(label)=`).
pgcite renders one page at a time, so each title comes from a light reading of the page that holds
it: its first title and its labelled titles, found by their underlines, not by a parse. Labels are
looked up across the pages the toctrees reach from the root document, the pages Sphinx builds,
walked once and only when a page first asks; the same walk is the pages' reading order."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from pgcite.ingest.sites.base import Files

__all__ = ["Outline"]

MAX_PAGES = 20_000  # a toctree walk reads no more pages than this

_ADORNMENT = r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]"""
# A title: a text line, under an optional overline, over a line of one repeated punctuation mark.
_RST_TITLE = re.compile(
    rf"^(?:(?P<over>{_ADORNMENT})(?P=over){{2,}}[ \t]*\n)?(?P<title>\S[^\n]*?)[ \t]*\n"
    rf"(?P<under>{_ADORNMENT})(?P=under){{2,}}[ \t]*$",
    re.MULTILINE,
)
_RST_LABELS = re.compile(r"^(?:\.\.[ \t]+_(?P<label>[^:\n`]+|`[^`]+`):[ \t]*\n(?:[ \t]*\n)*)+", re.MULTILINE)
_RST_LABEL = re.compile(r"\.\.[ \t]+_([^:\n`]+|`[^`]+`):")
_RST_TOCTREE = re.compile(r"^\.\.[ \t]+toctree::[^\n]*\n(?P<body>(?:[ \t]+[^\n]*\n|[ \t]*\n)*)", re.MULTILINE)
_MD_HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>[^\n]+?)[ \t#]*$", re.MULTILINE)
_MD_LABELS = re.compile(r"^(?:\((?P<label>[\w.:-]+)\)=[ \t]*\n(?:[ \t]*\n)*)+(?=#)", re.MULTILINE)
_MD_LABEL = re.compile(r"\(([\w.:-]+)\)=")
_MD_TOCTREE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{toctree\}[^\n]*\n(?P<body>.*?)^(?P=fence)", re.M | re.S)
_MD_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.MULTILINE | re.DOTALL)
_ROLE = re.compile(r":[\w:.+-]+:`([^`]*)`")
_EXPLICIT = re.compile(r"^(.+?)\s*<[^<>]*>$")
_ENTRY_TARGET = re.compile(r"<([^<>]+)>$")


def plain_title(text: str) -> str:
    """A title as the page shows it: roles as their text, without inline markup or escapes."""
    text = _ROLE.sub(lambda m: (_EXPLICIT.sub(r"\1", m.group(1))).lstrip("~!"), text)
    text = re.sub(r"(\*\*|\*|``|`)(.+?)\1", r"\2", text)
    return " ".join(text.replace("\\", "").split())


@dataclass
class _Read:
    title: str = ""  # the page's first title
    labels: dict[str, str] = field(default_factory=dict)  # label (as Sphinx normalises it) -> title
    toctree: list[str] = field(default_factory=list)  # docnames, as written (relative or /absolute)


@dataclass
class _Walk:
    order: dict[str, int] = field(default_factory=dict)  # site path -> place in the reading order
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (site path, title)
    toctrees: list[str] = field(default_factory=list)  # site paths of the pages with a toctree


def _label(name: str) -> str:
    return " ".join(name.strip("`").split()).lower()


def _read_rst(text: str) -> _Read:
    read = _Read()
    titles = list(_RST_TITLE.finditer(text))
    if titles:
        read.title = plain_title(titles[0]["title"])
    starts = {m.start(): m for m in titles}
    for labels in _RST_LABELS.finditer(text):
        if (title := starts.get(labels.end())) is not None:
            for name in _RST_LABEL.findall(labels.group(0)):
                read.labels[_label(name)] = plain_title(title["title"])
    for toctree in _RST_TOCTREE.finditer(text):
        read.toctree += _entries(toctree["body"].splitlines())
    return read


def _read_myst(text: str) -> _Read:
    read = _Read()
    for toctree in _MD_TOCTREE.finditer(text):
        read.toctree += _entries(toctree["body"].splitlines())
    text = _MD_FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # headings in code are not
    if first := _MD_HEADING.search(text):
        read.title = plain_title(first["title"])
    for labels in _MD_LABELS.finditer(text):
        if heading := _MD_HEADING.match(text, labels.end()):
            for name in _MD_LABEL.findall(labels.group(0)):
                read.labels[_label(name)] = plain_title(heading["title"])
    return read


def _entries(lines: list[str]) -> list[str]:
    """A toctree's documents: `name` or `Title <name>`; options, URLs, globs and `self` left out."""
    found = []
    for line in (line.strip() for line in lines):
        if not line or line.startswith(":") or line == "self":
            continue
        target = m.group(1) if (m := _ENTRY_TARGET.search(line)) else line
        if "://" not in target and not any(c in target for c in "*?["):
            found.append(target)
    return found


class Outline:
    """Page and section titles of one Sphinx site, read as they are asked for."""

    def __init__(self, files: Files, suffixes: tuple[str, ...], root: str) -> None:
        self.files = files
        self.suffixes = suffixes
        self.root = root
        self._pages: dict[str, tuple[str, _Read] | None] = {}  # docname -> (site path, what it holds)
        self._walked: _Walk | None = None

    def doc(self, target: str, page: str) -> tuple[str, str] | None:
        """(site path, title) of the page `:doc:`target`` names from the page `page`."""
        found = self._page(_docname(target, page))
        return (found[0], found[1].title) if found and found[1].title else None

    def ref(self, label: str, page: str) -> tuple[str, str] | None:
        """(site path, title) of the section `:ref:`label`` names, from the page `page`: its own
        labels first (an orphan page is in no toctree), then the site's."""
        own, name = self._page(self.docname(page)), _label(label)
        if own is not None and (title := own[1].labels.get(name)):
            return own[0], title
        return self._walk().labels.get(name)

    def docname(self, site_path: str) -> str:
        """A page's site path without its suffix (`guide/install.rst`: guide/install)."""
        return next((site_path[: -len(s)] for s in self.suffixes if site_path.endswith(s)), site_path)

    def position(self, page: str) -> tuple[int | None, list[str]]:
        """The page's place in the toctrees' reading order (None: in none), and the pages whose
        toctrees say it."""
        walked = self._walk()
        return walked.order.get(page), walked.toctrees

    def _page(self, docname: str) -> tuple[str, _Read] | None:
        if docname not in self._pages:
            self._pages[docname] = None
            for suffix in self.suffixes:
                try:
                    text = self.files.read(docname + suffix)
                except OSError:
                    continue
                read = _read_myst(text) if suffix == ".md" else _read_rst(text)
                self._pages[docname] = (docname + suffix, read)
                break
        return self._pages[docname]

    def _walk(self) -> _Walk:
        """The pages the root document's toctrees reach, depth first as Sphinx's navigation reads
        them (each where it is first listed), walked once."""
        if self._walked is not None:
            return self._walked
        walked = self._walked = _Walk()
        stack, seen = [self.root], {self.root}
        while stack and len(walked.order) < MAX_PAGES:
            found = self._page(stack.pop())
            if found is None:
                continue
            site_path, read = found
            walked.order[site_path] = len(walked.order)
            for name, title in read.labels.items():
                walked.labels.setdefault(name, (site_path, title))
            if read.toctree:
                walked.toctrees.append(site_path)
            children = [c for c in dict.fromkeys(_docname(e, site_path) for e in read.toctree) if c not in seen]
            seen.update(children)
            stack.extend(reversed(children))
        return walked


def _docname(target: str, page: str) -> str:
    """A document's name (its site path without suffix) from `target` as written in `page`."""
    target = target.strip()
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(page), target)
    return posixpath.normpath(joined)
