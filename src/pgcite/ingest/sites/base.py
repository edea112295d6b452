"""What every site generator shares: reading the site's own files, bounded includes, and the
steps from a source file to a parsed page with its version, kind and links.

A generator subclasses `Site` and says which files are pages (`content_dirs`, `pages`,
`partials`), how its markup becomes Markdown (`prepare`), how pages are routed (`route`) and
which Markdown dialect it speaks (anchors, indented code). Paths come in two frames: a *source
path* is relative to the folder the user ingested, a *site path* to the folder holding the
site's configuration; they differ when the user points at the docs folder inside a site.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pgcite.ingest.markdown import PLAIN, Dialect, ParsedDocument, parse_body, split_front_matter
from pgcite.ingest.sites.changelog import is_changelog
from pgcite.ingest.sites.openapi import SPEC_FILES, is_spec, spec_markdown
from pgcite.ingest.sources import Document, Source

__all__ = ["Files", "Includes", "Page", "Site", "join_url", "web_address"]

# Includes: how deep they may nest and how much text one page may pull in.
MAX_INCLUDE_DEPTH = 5
MAX_INCLUDED_CHARS = 2_000_000


class Files:
    """The site's files, read through the source. `prefix` is the ingested folder's site path
    ("" when the user pointed at the site root)."""

    def __init__(self, source: Source, prefix: str = "") -> None:
        self.source = source
        self.prefix = prefix.strip("/")

    def to_site(self, source_path: str) -> str:
        return posixpath.normpath(posixpath.join(self.prefix, source_path)) if self.prefix else source_path

    def to_source(self, site_path: str) -> str:
        return posixpath.relpath(site_path, self.prefix) if self.prefix else site_path

    def read(self, site_path: str) -> str:
        """The text of a site file; OSError (one line) when missing, out of bounds or not UTF-8."""
        raw = self.source.read(self.to_source(posixpath.normpath(site_path)))
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise OSError(f"{site_path} is not UTF-8 text") from None

    def exists(self, site_path: str) -> bool:
        return self.source.exists(self.to_source(posixpath.normpath(site_path)))


@dataclass
class _Budget:
    """What one page's includes share, however deep: the report, the cache, the size used."""

    problems: list[str] = field(default_factory=list)
    cache: dict[str, str] = field(default_factory=dict)
    tried: list[str] = field(default_factory=list)  # every site path asked for, found or not
    used: int = 0


class Includes:
    """The files one page includes: each read at most once, nested at most MAX_INCLUDE_DEPTH
    deep, MAX_INCLUDED_CHARS in all; every include that cannot be honoured is one line in
    `problems` and leaves nothing in the page."""

    def __init__(self, files: Files, page: str, budget: _Budget | None = None) -> None:
        self.files = files
        self.page = page  # site path of the including file: relative targets start from its folder
        self._budget = budget or _Budget()

    @property
    def problems(self) -> list[str]:
        return self._budget.problems

    @property
    def tried(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._budget.tried))

    def at(self, site_path: str) -> Includes:
        """The same page's includes, seen from an included file (its own relative targets)."""
        return Includes(self.files, site_path, self._budget)

    def resolve(self, target: str, *, relative_to: str | None = None) -> str:
        """The site path of `target`, relative to the site path `relative_to` (a folder; default:
        the including file's own folder). A leading `/` is the site root."""
        base = posixpath.dirname(self.page) if relative_to is None else relative_to
        joined = target.lstrip("/") if target.startswith("/") else posixpath.join(base, target)
        return posixpath.normpath(joined)

    def depends_on(self, site_path: str) -> None:
        """A file the page shows something of without including it (the title a reference shows):
        the page is read again when it changes, as when an include does."""
        self._budget.tried.append(site_path)

    def read(self, site_path: str, depth: int, shown_as: str) -> str | None:
        budget = self._budget
        budget.tried.append(site_path)
        if depth >= MAX_INCLUDE_DEPTH:
            budget.problems.append(f"include {shown_as} nested more than {MAX_INCLUDE_DEPTH} deep: left out")
            return None
        if site_path not in budget.cache:
            try:
                budget.cache[site_path] = self.files.read(site_path)
            except OSError as err:
                budget.problems.append(f"include {shown_as} left out: {_reason(err)}")
                return None
        text = budget.cache[site_path]
        if budget.used + len(text) > MAX_INCLUDED_CHARS:
            budget.problems.append(
                f"include {shown_as} left out: the page's includes exceed {MAX_INCLUDED_CHARS:,} characters"
            )
            return None
        budget.used += len(text)
        return text


def _reason(err: OSError) -> str:
    text = str(err.args[-1] if err.args else err) if not err.strerror else err.strerror
    return " ".join(str(text).split())


@dataclass(frozen=True)
class Page:
    path: str  # source path
    title: str
    parsed: ParsedDocument
    route: str  # relative to the base URL: "tutorial/cors/", "docs/next/cli", "" for the home page
    version: str  # "" when the site has no versions
    kind: str  # "page" or "changelog"
    language: str = ""  # lower-case BCP 47 tag ("en", "pt-br"); "" when the site does not say
    problems: tuple[str, ...] = ()  # includes left out, one line each
    included: tuple[str, ...] = ()  # site paths of the files it includes (found or not)
    position: int | None = None  # its place in the site's reading order; None where the site says none


def web_address(url: str) -> bool:
    """Whether `url` is an http:// or https:// address with a host and nothing unprintable in it:
    what a base URL must be, since it begins every citation a client opens (`javascript:` would
    run as a link; a path alone is no link outside the site)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # http://[bad
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname) and url.isprintable() and " " not in url


def join_url(base_url: str, route: str, anchor: str | None = None) -> str:
    if not base_url:
        return ""
    # The home page is the base URL as given: an API reference at /docs is not /docs/.
    url = base_url.rstrip("/") + "/" + route.lstrip("/") if route else base_url
    return f"{url}#{anchor}" if anchor else url


class Site:
    """A site generator's view of a folder. Subclasses set the class attributes and override
    what their generator does differently."""

    name: ClassVar[str]
    base_url_setting: ClassVar[str] = "the site's configuration"  # where `base_url` comes from, as a user finds it
    dialect: ClassVar[Dialect] = PLAIN
    markers: ClassVar[tuple[str, ...]] = ()  # site paths, any of which identifies the generator
    pages: ClassVar[tuple[str, ...]] = ("*.md", "*.markdown")  # file name globs of pages
    partials: ClassVar[tuple[str, ...]] = ()  # globs (under a content dir) of files that are not pages
    # What publishes its API descriptions ("swagger-ui" or "redoc"); None: as each suggests.
    api_renderer: ClassVar[str | None] = None

    def __init__(self, files: Files) -> None:
        self.files = files
        self.base_url = ""  # from the site's configuration, when it says
        self.versions: tuple[str, ...] = ()  # newest first
        self.default_version = ""  # what search answers from by default
        self.content_dirs: tuple[str, ...] = ("",)  # site paths of the folders holding pages
        # The languages the site publishes (lower-case BCP 47 tags, the default first); () when its
        # layout and configuration name none. A page's own is `language_of`.
        self.languages: tuple[str, ...] = ()
        self.default_language = ""
        # What the site's configuration could not give (a file refused, left out), one line each.
        self.problems: list[str] = []
        self._digests: dict[str, str] = {}  # site path -> sha256 of an included file, this run

    @classmethod
    def detect(cls, files: Files) -> bool:
        return any(files.exists(marker) for marker in cls.markers)

    # --- which files are pages -----------------------------------------------------------

    def _globs(self, names: tuple[str, ...]) -> list[str]:
        """`names` under every content dir that the ingested folder holds, as source-path globs."""
        globs: list[str] = []
        prefix = self.files.prefix
        for folder in self.content_dirs:
            if not folder or prefix == folder or prefix.startswith(folder + "/"):
                globs += names  # the ingested folder is (inside) this content dir: any file in it
            elif not prefix or folder.startswith(prefix + "/"):
                globs += [f"{self.files.to_source(folder)}/**/{name}" for name in names]
        return globs

    @property
    def include(self) -> tuple[str, ...]:
        return tuple(self._globs((*self.pages, *SPEC_FILES)))  # an API description beside the pages too

    @property
    def exclude(self) -> tuple[str, ...]:
        return tuple(self._globs(self.partials))

    def covers(self) -> bool:
        """Whether the ingested folder holds pages of this site at all."""
        return bool(self.include)

    # --- what a page is ------------------------------------------------------------------

    def version_of(self, site_path: str) -> str:
        return ""

    def language_of(self, site_path: str) -> str:
        """The page's language, from where the site keeps it (a path alone: `--languages` leaves
        pages out before reading them)."""
        return self.default_language

    def dialect_for(self, site_path: str) -> Dialect:
        return self.dialect

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        """The page's URL relative to the base URL: by default the file itself."""
        return site_path

    @property
    def publishing(self) -> str:
        """How the site routes its pages where its generator's default does not (a builder, a
        route base): "" for the default. Kept with each stored page, so a change re-routes them."""
        return ""

    def split(self, site_path: str, text: str, problems: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        """(body, front matter) of a page's text; front matter left out is said in `problems`."""
        return split_front_matter(text, problems)

    def is_api(self, site_path: str) -> bool:
        """Whether the file is an OpenAPI or Swagger document rather than a page of markup."""
        return is_spec(site_path)

    def prepare(self, body: str, includes: Includes) -> str:
        """The page's body with this generator's markup turned into Markdown (includes
        resolved); the markup every generator shares is cleaned after, by markdown.clean_body."""
        return body

    def fallback_title(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        return posixpath.splitext(posixpath.basename(site_path))[0]

    def position_of(self, site_path: str, includes: Includes) -> int | None:
        """The page's place in the site's reading order (the files that say it noted in `includes`,
        so a change to them reads the page again); None where the site has no order of its own."""
        return None

    def render(self, document: Document) -> Page:
        site_path = self.files.to_site(document.path)
        includes = Includes(self.files, site_path)
        if self.is_api(site_path):
            title, body = spec_markdown(document.text, site_path, self.api_renderer)
            front_matter: dict[str, Any] = {"title": title}
            parsed = parse_body(body, front_matter, title, PLAIN)
        else:
            body, front_matter = self.split(site_path, document.text, includes.problems)
            body = self.prepare(body, includes)
            parsed = parse_body(
                body, front_matter, self.fallback_title(site_path, front_matter), self.dialect_for(site_path)
            )
        kind = "changelog" if is_changelog(site_path, parsed) else "page"
        position = self.position_of(site_path, includes)  # before `tried` is read: it notes what says it
        return Page(
            document.path,
            parsed.title,
            parsed,
            self.route(site_path, front_matter),
            self.version_of(site_path),
            kind,
            self.language_of(site_path),
            tuple(includes.problems),
            includes.tried,
            position,
        )

    def digest(self, included: Sequence[str]) -> str:
        """What the files a page includes hold now, in one hash ("" when it includes none)."""
        if not included:
            return ""
        parts = []
        for site_path in included:
            if site_path not in self._digests:
                try:
                    self._digests[site_path] = hashlib.sha256(
                        self.files.source.read(self.files.to_source(site_path))
                    ).hexdigest()
                except OSError:
                    self._digests[site_path] = "missing"
            parts.append(f"{site_path}={self._digests[site_path]}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


_CODE_FENCE_INFO = re.compile(r"[^\w+#.-]")


def code_fence(code: str, language: str = "", title: str = "") -> str:
    """`code` as a fenced block whose fence no line of the code can close."""
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    marker = "`" * max(3, longest + 1)
    info = _CODE_FENCE_INFO.sub("", language)
    label = f"**{title}**\n" if title else ""
    return f"{label}{marker}{info}\n{code.rstrip(chr(10))}\n{marker}"


def indent_lines(text: str, indent: str) -> str:
    """`text` with `indent` before each non-empty line (an include placed inside a list item)."""
    return "\n".join(indent + line if line else line for line in text.split("\n"))


_LANGUAGES = {
    ".py": "python",
    ".js": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".jsx": "jsx",
    ".ts": "ts",
    ".mts": "ts",
    ".tsx": "tsx",
    ".json": "json",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
    ".sh": "bash",
    ".bash": "bash",
    ".html": "html",
    ".css": "css",
    ".scss": "scss",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".sql": "sql",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".swift": "swift",
    ".md": "markdown",
    ".mdx": "mdx",
    ".txt": "text",
    ".ini": "ini",
    ".xml": "xml",
    ".graphql": "graphql",
    ".dockerfile": "dockerfile",
}


def fence_language(path: str) -> str:
    """A code fence's language for an included file, from its extension."""
    name = posixpath.basename(path).lower()
    return "dockerfile" if name == "dockerfile" else _LANGUAGES.get(posixpath.splitext(name)[1], "")


def select_lines(text: str, spec: str) -> str:
    """Lines of `text` chosen by "3", "1:11", "14:18,21:22" or ":20" / "5:" (1-based, inclusive);
    an empty or unreadable spec keeps all."""
    lines = text.split("\n")
    chosen: list[str] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        start, sep, end = part.partition(":")
        try:
            first = int(start) if start.strip() else 1
            last = (int(end) if end.strip() else len(lines)) if sep else first
        except ValueError:
            return text
        chosen += lines[max(first, 1) - 1 : last]
    return "\n".join(chosen) if chosen else text
