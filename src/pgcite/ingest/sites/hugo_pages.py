"""Hugo's content tree, as Hugo builds it before it renders anything: each file's logical path and
kind, which files are pages it publishes (build options, headless bundles, drafts, cascades, a leaf
bundle's resources), and the lookups its shortcodes make (GetPage, a section's pages)."""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from pgcite.ingest.markdown import load_front_matter, split_front_matter
from pgcite.ingest.sites.hugo_config import lower_keys

__all__ = ["Entry", "Tree", "front_matter", "glob_matches", "hidden_globs", "logical_parts"]

_UNRENDERED = {"never", "link", "false"}  # render values that write no page (`false`: the old spelling)
_LEAF_INDEX = re.compile(r"index(?:\.[^./]+)?\.(?:md|markdown)")


@dataclass(frozen=True)
class Entry:
    site_path: str
    logical: str  # Hugo's logical path, lower-case: "/", "/functions", "/functions/images/filter"
    kind: str  # "home", "section" or "page"
    language: str
    front: Mapping[str, Any]  # front matter, keys lower-cased
    published: bool = True
    listed: bool = True

    @property
    def title(self) -> str:
        return str(self.front.get("linktitle") or self.front.get("title") or posixpath.basename(self.logical))

    @property
    def description(self) -> str:
        return str(self.front.get("description") or "").strip()

    @property
    def weight(self) -> tuple[int, int]:
        weight = self.front.get("weight")
        return (0, weight) if isinstance(weight, int) and weight else (1, 0)  # weight 0: last


_YAML = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*$\r?\n?", re.DOTALL | re.MULTILINE)
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def front_matter(text: str) -> tuple[str, dict[str, Any]]:
    """(body, front matter with keys lower-cased), as markdown.split_front_matter reads them; YAML
    goes through libyaml where it is installed, since every page's front matter is read twice (the
    page's render says why one is left out)."""
    match = _YAML.match(text)
    if match:
        data = load_front_matter(match[1], loader_class=_FAST_LOADER)
        return text[match.end() :], lower_keys(data) if isinstance(data, dict) else {}
    body, data = split_front_matter(text)
    return body, lower_keys(data)


def logical_parts(content_path: str, suffixes: Mapping[str, str]) -> tuple[str, str, str]:
    """(folder, stem, language suffix) of a content path: "a/b.fr.md" -> ("a", "b", "fr")."""
    folder, name = posixpath.split(content_path)
    stem = posixpath.splitext(name)[0]
    base, dot, suffix = stem.rpartition(".")
    if dot and suffix.lower() in suffixes:
        return folder, base, suffix.lower()
    return folder, stem, ""


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """Hugo's glob syntax (`**`, `*`, `?`, `{a,b}`) as a regular expression."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]", "{": "(?:", ",": "|" if depth else ",", "}": ")"}.get(ch, re.escape(ch)))
        depth += {"{": 1, "}": -1}.get(ch, 0)
        i += 1
    return re.compile("".join(out), re.IGNORECASE)


def glob_matches(pattern: str, path: str) -> bool:
    return bool(_glob(pattern).fullmatch(path))


def _matches(target: Mapping[str, Any], entry: Entry) -> bool:
    for key, value in (
        ("path", entry.logical),
        ("kind", entry.kind),
        ("lang", entry.language),
        ("environment", "production"),
    ):
        pattern = target.get(key)
        if isinstance(pattern, str) and pattern and not glob_matches(pattern, value):
            return False
    return True


def _cascades(front: Mapping[str, Any]) -> list[dict[str, Any]]:
    value = front.get("cascade")
    return [c for c in (value if isinstance(value, list) else [value]) if isinstance(c, dict)]


def _build(values: Mapping[str, Any]) -> dict[str, Any] | None:
    build = values.get("build", values.get("_build"))
    return build if isinstance(build, dict) else None


class Tree:
    """The files of a Hugo site's content roots (front matter read), as Hugo sees them."""

    def __init__(self, entries: Iterable[Entry], config_cascade: Iterable[dict[str, Any]] = (), drafts: bool = False):
        self.entries = {e.site_path: e for e in entries}
        self._cascade = [lower_keys(c) for c in config_cascade]
        self._drafts = drafts
        self._decide()
        self._by_logical: dict[tuple[str, str], Entry] = {}
        for entry in self.entries.values():
            self._by_logical.setdefault((entry.language, entry.logical), entry)

    def _decide(self) -> None:
        sections = {e.logical: e for e in self.entries.values() if e.kind in ("home", "section")}
        leaves = {
            posixpath.dirname(p)
            for p, e in self.entries.items()
            if e.kind == "page" and _LEAF_INDEX.fullmatch(posixpath.basename(p))
        }
        decided = {}
        for path, entry in self.entries.items():
            if _in_leaf(path, leaves):  # a leaf bundle's file: a resource of its page, not a page
                decided[path] = Entry(path, entry.logical, "resource", entry.language, entry.front, False, False)
                continue
            build = _build(entry.front)
            if build is None:  # the closest cascade that targets it (its own, its sections', the config's)
                build = next((_build(v) for v in self._cascaded(entry, sections) if _build(v) is not None), None)
            build = build or {}
            shown = entry.front.get("headless") is not True and (self._drafts or entry.front.get("draft") is not True)
            published = shown and str(build.get("render", "always")).lower() not in _UNRENDERED
            # `list: local` keeps even an unrendered page in its section's pages (gohugo.io's glossary).
            listed = shown and (str(build["list"]).lower() != "never" if "list" in build else published)
            decided[path] = Entry(
                entry.site_path, entry.logical, entry.kind, entry.language, entry.front, published, listed
            )
        self.entries = decided

    def _cascaded(self, entry: Entry, sections: Mapping[str, Entry]) -> list[Mapping[str, Any]]:
        """The cascade values that reach `entry`, closest first: its own, its sections', the config's."""
        chain = [entry] + [sections[a] for a in _ancestors(entry.logical) if a in sections]
        found = []
        for values in [c for e in chain for c in _cascades(e.front)] + self._cascade:
            target = values.get("target", values.get("_target"))
            if not isinstance(target, dict) or _matches(target, entry):
                found.append(values)
        return found

    def param(self, entry: Entry, key: str) -> Any:
        """A page parameter: its own (`params` or, as older Hugo, top level), else cascaded."""
        key = key.lower()
        own = entry.front.get("params")
        if isinstance(own, dict) and key in own:
            return own[key]
        if key in entry.front:
            return entry.front[key]
        sections = {e.logical: e for e in self.entries.values() if e.kind in ("home", "section")}
        for values in self._cascaded(entry, sections):
            params = values.get("params")
            if isinstance(params, dict) and key in params:
                return params[key]
        return None

    @property
    def unpublished(self) -> list[str]:
        return sorted(p for p, e in self.entries.items() if not e.published)

    def get(self, ref: str, page: Entry | None, language: str) -> Entry | None:
        """Hugo's GetPage: a logical path (a file path too, with or without its extension), from
        the content root or, without a leading `/`, from the page's folder first."""
        ref = ref.strip().lower()
        ref = re.sub(r"(?:/_?index)?\.(?:md|markdown)$", "", ref).rstrip("/") or "/"
        tries = [ref] if ref.startswith("/") else []
        if not ref.startswith("/"):
            if page is not None:
                base = (
                    page.logical
                    if page.kind != "page" or page.site_path.endswith(("/index.md", "/index.markdown"))
                    else posixpath.dirname(page.logical)
                )
                tries.append(posixpath.normpath(posixpath.join(base, ref)))
            tries.append("/" + ref)
        for logical in tries:
            found = self._by_logical.get((language, logical)) or self._by_logical.get(("", logical))
            if found is None:  # a site without languages keeps "" for each
                found = next((e for (_, lp), e in self._by_logical.items() if lp == logical), None)
            if found is not None:
                return found
        return None

    def children(self, section: Entry, kind: str) -> list[Entry]:
        """A section's listed pages (kind "page") or sections, directly in it, in Hugo's default
        order (weight, then title)."""
        prefix = section.logical.rstrip("/") + "/"
        found = [
            e
            for e in self.entries.values()
            if e.listed
            and e.kind == kind
            and e.language == section.language
            and e.logical.startswith(prefix)
            and "/" not in e.logical[len(prefix) :]
        ]
        return sorted(found, key=lambda e: (e.weight, e.title.lower(), e.logical))


def _in_leaf(site_path: str, leaves: set[str]) -> bool:
    folder = posixpath.dirname(site_path)
    if folder in leaves and not _LEAF_INDEX.fullmatch(posixpath.basename(site_path)):
        return True
    while folder:
        folder = posixpath.dirname(folder)
        if folder in leaves:
            return True
    return False


def _ancestors(logical: str) -> list[str]:
    """ "/a/b/c" -> ["/a/b", "/a", "/"]."""
    parts = [p for p in logical.split("/") if p]
    return ["/" + "/".join(parts[:i]) if i else "/" for i in range(len(parts) - 1, -1, -1)]


def hidden_globs(paths: set[str], hidden: set[str], roots: list[str]) -> set[tuple[str, str]]:
    """The `hidden` files among `paths` (site paths), as few globs as can say it: (folder, "**")
    for a folder inside a content root holding hidden files only, (folder, pattern) for a section
    published without its pages, (file, "") for the rest."""
    shown: dict[str, set[str]] = {}  # folder -> the published files below it
    for path in paths:
        for folder in _folders(path):
            shown.setdefault(folder, set()).update(() if path in hidden else (path,))
    found: set[tuple[str, str]] = set()
    for path in hidden:
        for folder in (f for f in _folders(path) if any(f.startswith(r + "/") for r in roots)):  # outermost first
            kept = shown[folder]
            if not kept:
                found.add((folder, "**"))
                break
            only = next(iter(kept))
            if len(kept) == 1 and posixpath.dirname(only) == folder and (but := _all_but(posixpath.basename(only))):
                found.update((folder, glob) for glob in but)
                break
        else:
            found.add((path, ""))
    return found


def _folders(path: str) -> list[str]:
    """ "a/b/c.md" -> ["a", "a/b"]."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _all_but(name: str) -> list[str]:
    """Globs matching every path below a folder but its file `name` ("*/**" would match a file
    too, hence "*/*/**"); [] when `name` has a character a glob class cannot hold."""
    if set(name) & set("[]!^-\\*?"):
        return []
    return [f"{name[:i]}[!{ch}]*" for i, ch in enumerate(name)] + [f"{name}?*", "*/*/**"]
