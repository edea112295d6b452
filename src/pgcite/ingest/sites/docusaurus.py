"""Docusaurus: docs in `docs/` (the version still in work, routed under `next/` once the site
has released versions), released versions in `versioned_docs/version-X/` listed newest first in
`versions.json`; the newest is served at the route base (`/docs/`) and is what search answers
from by default (ingesting `docs/` alone: `next`, its only version). Translations are in
`i18n/<locale>/docusaurus-plugin-content-docs/current/` (and `version-X/`), served under
`/<locale>/` unless the locale is `i18n.defaultLocale`. `docusaurus.config.*` is code: what it
sets literally is read, else its documented defaults hold (route base `docs`, locale `en`);
`--route-base` overrides. Routes follow the docs plugin: `slug` and `id` front matter,
number prefixes stripped, `index`, `README` and a file named like its folder route to the folder.
Files and folders starting with `_` are partials, never pages."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.sites.base import Files, Includes, Site
from pgcite.ingest.sites.jsconfig import JsConfig
from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sites.locales import narrow
from pgcite.ingest.sites.mdx import MDX, prepare_mdx
from pgcite.ingest.sites.sitefiles import subfolders

__all__ = ["NEXT", "Docusaurus"]

NEXT = "next"  # the version label of docs/ when the site has released versions
I18N = "i18n"
DOCS_PLUGIN = "docusaurus-plugin-content-docs"
CURRENT = "current"  # a translation of docs/ (the version in work)
DEFAULT_LOCALE = "en"  # i18n.defaultLocale's default
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?P<rest>.*)$")
_NOT_A_PREFIX = re.compile(r"^(?:(?:\d{2}|\d{4})[-_.]\d{2}(?:[-_.](?:\d{2}|\d{4}))?|\d+[-_.]\d+)")  # dates, versions


def strip_number_prefix(name: str) -> str:
    """`01-intro` -> `intro`, but `2021-08-26-post` and `1.2-notes` stay (the docs plugin's rule)."""
    if _NOT_A_PREFIX.match(name):
        return name
    match = _NUMBER_PREFIX.match(name)
    return match["rest"] if match and match["rest"] else name


def _resolve(slug: str, folder: str) -> str:
    """A relative slug resolved against the folder's route, as URLs resolve (`..` climbs)."""
    parts = [p for p in folder.split("/") if p]
    for part in slug.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts) + ("/" if slug.endswith("/") else "")


def _i18n(config: JsConfig) -> tuple[str, list[str] | None]:
    """`i18n.defaultLocale` ("" when not set literally) and `i18n.locales` (None when computed)."""
    literal = config.object("i18n")
    entries = config.entries(literal) if literal else {}
    return config.string(entries.get("defaultLocale")) or "", config.strings(entries.get("locales"))


class Docusaurus(Site):
    name = "docusaurus"
    dialect = MDX
    markers = tuple(f"docusaurus.config.{ext}" for ext in ("js", "ts", "mjs", "cjs", "mts", "cts"))
    pages = ("*.md", "*.mdx")
    partials = ("_*",)
    levels = 5  # any folder of a translation: i18n/fr/docusaurus-plugin-content-docs/current/guides

    def __init__(self, files: Files, *, route_base: str | None = None) -> None:
        super().__init__(files)
        self.route_base = "docs" if route_base is None else route_base.strip("/")
        # Every released version with a folder: how the site routes, whatever part is ingested.
        self.released = tuple(v for v in self._listed_versions() if files.exists(f"versioned_docs/version-{v}"))
        config = JsConfig.first(files.read, self.markers)
        # `trailingSlash` when the configuration sets it literally; None (computed, or not set):
        # the docs plugin's own routes, a category index with its slash.
        written = config.top_level("trailingSlash") if config else None
        self.trailing_slash = {"true": True, "false": False}.get((written or "").strip())
        default_locale, named = _i18n(config) if config else ("", None)
        self.default_locale = default_locale or DEFAULT_LOCALE  # served without a locale in its URLs
        self.locales = self._translations(named)  # locale folder under i18n/ -> language tag
        folders = [("docs", ""), *((f"versioned_docs/version-{v}", "") for v in self.released)]
        for locale in self.locales:
            plugin = f"{I18N}/{locale}/{DOCS_PLUGIN}"
            folders += [(f"{plugin}/{CURRENT}", locale), *((f"{plugin}/version-{v}", locale) for v in self.released)]
        folders = [(folder, locale) for folder, locale in folders if locale == "" or files.exists(folder)]
        self.content_dirs = tuple(folder for folder, _ in folders)
        # Versions and languages are those of the folders ingested: `pgcite ingest website/docs`
        # holds no release, so its default version must be the one it has pages in.
        ingested = [(folder, locale) for folder, locale in folders if self._ingested(folder)]
        present = {self.version_of(folder + "/x") for folder, _ in ingested if files.exists(folder)}
        if self.released:
            self.versions = tuple(v for v in (*self.released, NEXT) if v in present) or (NEXT,)
            self.default_version = next((v for v in self.versions if v != NEXT), NEXT)
        # The default locale's language, when the site names a locale ("" when it does not).
        named_any = default_locale or self.locales
        self._default_tag = (language_tag(self.default_locale) or self.default_locale.lower()) if named_any else ""
        if named_any:
            tags = [self.locales.get(locale, self._default_tag) for folder, locale in ingested if files.exists(folder)]
            self.languages, self.default_language = narrow(self._default_tag, tags)

    def _ingested(self, folder: str) -> bool:
        """Whether the ingested folder holds `folder` or lies inside it (see Site._globs)."""
        prefix = self.files.prefix
        return not prefix or prefix == folder or prefix.startswith(folder + "/") or folder.startswith(prefix + "/")

    def _translations(self, named: list[str] | None) -> dict[str, str]:
        """The locales with translated docs (`i18n/<locale>/docusaurus-plugin-content-docs/`):
        those `i18n.locales` lists, or when it is computed, the folders found."""
        candidates = named if named is not None else subfolders(self.files, I18N)
        return {
            locale: language_tag(locale) or locale.lower()
            for locale in candidates
            if locale != self.default_locale and self.files.exists(f"{I18N}/{locale}/{DOCS_PLUGIN}")
        }

    def _listed_versions(self) -> list[str]:
        try:
            data = json.loads(self.files.read("versions.json"))
        except (OSError, ValueError):
            return []
        return [str(v) for v in data] if isinstance(data, list) else []

    def _where(self, site_path: str) -> tuple[str, str, str]:
        """(locale folder, "" for the default's; version label; path inside that version's docs)."""
        current = NEXT if self.released else ""
        if site_path.startswith(f"{I18N}/"):
            locale, _, rest = site_path[len(I18N) + 1 :].partition("/")
            folder, _, rest = rest.partition("/")[2].partition("/")  # past docusaurus-plugin-content-docs/
            return locale, (folder[len("version-") :] if folder.startswith("version-") else current), rest
        if site_path.startswith("versioned_docs/version-"):
            folder, _, rest = site_path[len("versioned_docs/version-") :].partition("/")
            return "", folder, rest
        return "", current, posixpath.relpath(site_path, "docs")

    def version_of(self, site_path: str) -> str:
        return self._where(site_path)[1]

    def language_of(self, site_path: str) -> str:
        return self.locales.get(self._where(site_path)[0], self._default_tag)

    def fallback_title(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        stem = posixpath.splitext(posixpath.basename(site_path))[0]
        return str(front_matter.get("id") or strip_number_prefix(stem))

    @property
    def publishing(self) -> str:
        if self.route_base == "docs" and self.trailing_slash is None:
            return ""
        return f"route base {self.route_base!r}, trailingSlash {self.trailing_slash}"

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        locale, version, path = self._where(site_path)
        folder, name = posixpath.split(path)
        stem = posixpath.splitext(name)[0]
        folder_route = "/".join(strip_number_prefix(part) for part in folder.split("/") if part)
        slug = front_matter.get("slug")
        slug = str(slug) if isinstance(slug, (str, int, float)) and str(slug) else None
        parent = folder_route.rsplit("/", 1)[-1].lower()
        if slug is not None and slug.startswith("/"):
            doc_route = slug
        elif slug is None and (
            stem.lower() in ("index", "readme") or (parent and strip_number_prefix(stem).lower() == parent)
        ):
            doc_route = _resolve(folder_route + "/", "")  # a category index: the folder itself
        else:
            base_id = str(front_matter.get("id") or strip_number_prefix(stem))
            doc_route = _resolve(slug if slug is not None else base_id, folder_route)
        # The newest release is served at the route base, the others (and `next`) under their
        # label; a locale other than the default is served under its name, before all.
        version_route = "" if version in ("", self.released[0] if self.released else "") else version
        locale_route = "" if locale in ("", self.default_locale) else locale
        prefix = "/".join(part for part in (locale_route, self.route_base, version_route) if part)
        route = posixpath.join(prefix, doc_route.lstrip("/")) if doc_route != "/" else prefix + "/"
        route = route.lstrip("/")
        if route and self.trailing_slash is not None:
            route = route.rstrip("/") + ("/" if self.trailing_slash else "")
        return route

    def prepare(self, body: str, includes: Includes) -> str:
        return prepare_mdx(body, includes)
