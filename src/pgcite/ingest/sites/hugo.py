"""Hugo: the content roots and languages its configuration gives (hugo_config), the pages it
publishes (hugo_pages: build options, headless bundles, drafts), routed as Hugo routes them
(`a/b.md` -> `a/b/`, sections and leaf bundles -> their folder, `slug`, `url`, uglyURLs, a language
folder for the others, lower case), and shortcodes reduced to what they render (shortcodes), the
`include` and listing shortcodes of gohugo.io's docs read from the content tree."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from pgcite.ingest import markup
from pgcite.ingest.sites.base import Files, Includes, Page, Site, code_fence
from pgcite.ingest.sites.hugo_config import CONFIG_DIRS, CONFIG_FILES, Root, lower_keys, read_config
from pgcite.ingest.sites.hugo_includes import glossary_links, resolve
from pgcite.ingest.sites.hugo_pages import Entry, Tree, front_matter, glob_matches, hidden_globs, logical_parts
from pgcite.ingest.sites.shortcodes import expand
from pgcite.ingest.sources import Document

__all__ = ["Hugo"]

_PAGE_FILE = re.compile(r".*\.(?:md|markdown)", re.IGNORECASE)
# goldmark's block attributes on a line of their own, after the block they style: {.class key="v"}
_BLOCK_ATTRIBUTES = re.compile(
    r"^[ \t]*\{(?:[ \t]*(?:[#.][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}\"']+)))+[ \t]*\}[ \t]*$"
)


def _sanitize(segment: str) -> str:
    """Hugo's path sanitizing: letters, digits, marks and `._~+#%` kept, runs of spaces and
    hyphens to one hyphen (none leading or trailing), anything else dropped."""
    out: list[str] = []
    hyphen = False
    for ch in segment:
        if ch.isalnum() or unicodedata.category(ch).startswith("M") or ch in "._~+#%":
            if hyphen:
                out.append("-")
            out.append(ch)
            hyphen = False
        elif out and (ch == "-" or ch.isspace()):
            hyphen = True
    return "".join(out)


def _escape(path: str) -> str:
    """`path` as a glob matching only itself, anchored at the source root ("./" keeps a bare
    name from matching that name in every folder)."""
    return "./" + ("" if path == "." else re.sub(r"([\[\]*?])", r"[\1]", path))


class Hugo(Site):
    name = "hugo"
    base_url_setting = "the Hugo configuration's baseURL"
    markers = (*CONFIG_FILES[:4], *(f"{d}/{c}" for d in CONFIG_DIRS[:1] for c in CONFIG_FILES))

    @classmethod
    def detect(cls, files: Files) -> bool:
        return super().detect(files) or (any(files.exists(c) for c in CONFIG_FILES[4:]) and files.exists("content"))

    def __init__(self, files: Files) -> None:
        super().__init__(files)
        self.config = read_config(files)
        self.problems += self.config.problems
        self.base_url = self.config.base_url
        self.languages = self.config.languages
        self.default_language = self.config.default_language
        self.content_dirs = tuple(r.source for r in self.config.roots if not self._is_file(r))
        self.redirects: dict[str, str] = {}  # alias route -> the route of the page it leads to
        self._tree: Tree | None = None
        self._left_out: list[str] = []  # site paths a mount's `files` leaves out
        self.templates: dict[str, str | None] = {}  # shortcode name -> its plain-text template

    # --- which files are pages -----------------------------------------------------------

    @staticmethod
    def _is_file(root: Root) -> bool:
        return bool(_PAGE_FILE.fullmatch(root.target))

    def _visible(self, site_path: str) -> bool:
        prefix = self.files.prefix
        return not prefix or site_path == prefix or site_path.startswith(prefix + "/")

    @property
    def include(self) -> tuple[str, ...]:
        files = [
            _escape(self.files.to_source(r.source))
            for r in self.config.roots
            if self._is_file(r) and self._visible(r.source)
        ]
        return (*self._globs(self.pages), *files)

    @property
    def exclude(self) -> tuple[str, ...]:
        """Files in the content roots Hugo does not publish as pages: headless bundles, build
        options that render nothing (their own or cascaded), drafts, a leaf bundle's other files."""
        hidden = set(self.tree.unpublished) | set(self._left_out)
        found = hidden_globs(set(self.tree.entries) | hidden, hidden, [r.source for r in self.config.roots])
        globs = set()
        for site_path, below in found:
            if self._visible(site_path):
                globs.add(_escape(self.files.to_source(site_path)) + (f"/{below}" if below else ""))
            elif below and self.files.prefix.startswith(site_path + "/"):
                globs.add("**")  # the ingested folder is inside a folder Hugo does not publish
        return (*self._globs(self.partials), *sorted(globs))

    @property
    def tree(self) -> Tree:
        """Every page file of the content roots with its front matter: read once, before the pages
        themselves, as Hugo reads its whole content tree before it renders one page."""
        if self._tree is None:
            source = self.files.source
            saved = source.include, source.exclude
            entries: list[Entry] = []
            try:
                source.include = self.include
                for item in source.scan():
                    if isinstance(item, Document) and (entry := self._entry(item)) is not None:
                        entries.append(entry)
            finally:
                source.include, source.exclude = saved
            self._tree = Tree(entries, self.config.cascade, self.config.drafts)
        return self._tree

    def _entry(self, document: Document) -> Entry | None:
        site_path = self.files.to_site(document.path)
        located = self._locate(site_path)
        if located is None:
            return None
        root, content_path = located
        relative = posixpath.relpath(site_path, root.source) if not self._is_file(root) else ""
        if any(glob_matches(g, relative) for g in root.excluded):
            self._left_out.append(site_path)
            return None
        folder, stem, _ = logical_parts(content_path, self.config.suffixes)
        kind = "section" if stem == "_index" else "page"
        if not folder and stem in ("_index", "index"):
            kind = "home"
        logical = "/" + "/".join(p for p in [folder, stem if kind == "page" and stem != "index" else ""] if p)
        front = front_matter(document.text)[1]
        return Entry(site_path, logical.lower(), kind, self.language_of(site_path), front)

    def _locate(self, site_path: str) -> tuple[Root, str] | None:
        """The content root holding `site_path`, and the file's path in the content tree."""
        best: Root | None = None
        for root in self.config.roots:
            inside = site_path == root.source or site_path.startswith(root.source + "/")
            if inside and (best is None or len(root.source) > len(best.source)):
                best = root
        if best is None:
            return None
        if self._is_file(best):
            return best, best.target
        return best, posixpath.normpath(posixpath.join(best.target, posixpath.relpath(site_path, best.source)))

    # --- languages and routes ------------------------------------------------------------

    def language_of(self, site_path: str) -> str:
        located = self._locate(site_path)
        if located is None:
            return self.default_language
        root, content_path = located
        if root.language:
            return root.language
        suffix = logical_parts(content_path, self.config.suffixes)[2]
        return self.config.suffixes[suffix] if suffix and self.languages else self.default_language

    def _path(self, path: str) -> str:
        return path.lower() if self.config.lower else path

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        located = self._locate(site_path)
        if located is None:
            return site_path
        prefix = self.config.prefixes.get(self.language_of(site_path), "")
        front = lower_keys(dict(front_matter))
        url = front.get("url")
        if isinstance(url, str) and url.strip():
            url = url.strip().replace("\\:", ":")
            if not url.startswith("/") and prefix:
                url = f"{prefix}/{url}"  # a relative `url` stays in its language's folder
            url = self._path(url.lstrip("/"))
            return url if not url or url.endswith("/") or "." in url.rsplit("/", 1)[-1] else url + "/"
        folder, stem, _ = logical_parts(located[1], self.config.suffixes)
        parts = [p for p in folder.split("/") if p]
        slug = str(front.get("slug") or "").strip()
        page = stem != "_index" and (stem != "index" or bool(parts))
        if page and stem == "index":
            parts[-1] = slug or parts[-1]
        elif page:
            parts.append(slug or stem)
        parts = [self._path(_sanitize(p)) for p in ([prefix] if prefix else []) + parts]
        route = "/".join(p for p in parts if p)
        if not route:
            return ""
        section = folder.split("/", 1)[0] if folder else ""
        return f"{route}.html" if page and self.config.ugly_for(section) else f"{route}/"

    def aliases(self, site_path: str, front_matter: Mapping[str, Any]) -> tuple[str, ...]:
        """The routes `aliases` front matter redirects to this page (site-relative, or relative to
        the page's folder), in its language's folder."""
        value = lower_keys(dict(front_matter)).get("aliases")
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        prefix = self.config.prefixes.get(self.language_of(site_path), "")
        route = self.route(site_path, front_matter).rstrip("/")
        located = self._locate(site_path)
        section = located is not None and logical_parts(located[1], self.config.suffixes)[1] == "_index"
        base = route if section else posixpath.dirname(route)  # relative to the folder the page is in
        found = []
        for name in (str(n).strip() for n in names if str(n).strip()):
            path = posixpath.join(prefix, name.lstrip("/")) if name.startswith("/") else posixpath.join(base, name)
            path = posixpath.normpath(path).lstrip("/")
            found.append(path if "." in path.rsplit("/", 1)[-1] or path in ("", ".") else path + "/")
        return tuple(p for p in found if p not in ("", "./"))

    def render(self, document: Document) -> Page:
        page = super().render(document)
        site_path = self.files.to_site(document.path)
        entry = self.entry(site_path)
        front = entry.front if entry is not None else front_matter(document.text)[1]
        for alias in self.aliases(site_path, front):
            self.redirects[alias] = page.route
        return page

    # --- markup --------------------------------------------------------------------------

    def prepare(self, body: str, includes: Includes) -> str:
        text = self._expand(body, includes, 0)
        language = self.language_of(includes.page)
        out = []
        for run, fence in markup.split_fenced(text):
            if fence is None:
                run = glossary_links(self, "\n".join(run), language).split("\n")
                out += self._math([line for line in run if not _BLOCK_ATTRIBUTES.match(line)])
            elif len(run) == 1 or not markup.fence_closes(run[-1], fence):  # left open: it runs to the end
                while len(run) > 1 and not run[-1].strip():
                    run = run[:-1]
                out += [*run, fence.indent + fence.marker]
            else:
                out += run
        return "\n".join(out)

    def _math(self, lines: list[str]) -> list[str]:
        """Passthrough math blocks (`\\[ ... \\]`, `$$ ... $$` when configured) as math code blocks:
        goldmark hands them to the page's math renderer untouched."""
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            pair = next(
                (p for p in self.config.math if line.startswith(p[0]) and (not out or not out[-1].strip())), None
            )
            end = next(
                (
                    j
                    for j in range(i, len(lines))
                    if pair
                    and lines[j].rstrip().endswith(pair[1])
                    and (j > i or len(line) >= len(pair[0]) + len(pair[1]))
                ),
                None,
            )
            if pair is None or end is None:
                out.append(lines[i])
                i += 1
                continue
            math = "\n".join(lines[i : end + 1]).strip()[len(pair[0]) : -len(pair[1])]
            out += code_fence(math.strip(), "math").split("\n")
            i = end + 1
        return out

    def _expand(self, text: str, includes: Includes, depth: int) -> str:
        return expand(text, lambda call: resolve(self, call, includes, depth))

    def included(self, entry: Entry, includes: Includes, depth: int, shown_as: str) -> str:
        """An entry's body with its shortcodes expanded, as `include` places it."""
        text = includes.read(entry.site_path, depth, shown_as)
        if text is None:
            return ""
        body = front_matter(text)[0]
        return self._expand(body, includes.at(entry.site_path), depth + 1).strip("\n")

    def href(self, entry: Entry) -> str:
        return "/" + self.route(entry.site_path, entry.front)

    def entry(self, site_path: str) -> Entry | None:
        return self.tree.entries.get(site_path)
