"""Starlight (Astro): `astro.config.*` beside `src/content/docs/`. Pages are routed `a/b.md` ->
`a/b/`, `index` -> its folder, each path segment slugged (lower case, spaces to `-`); `slug`
front matter wins. `.mdx` pages are MDX; asides (`:::note[Title]`) are shared container markup.

Languages: each key of the `locales` option is the folder holding that language (`root`: the
content folder itself), its `lang` the language (else the key); `defaultLocale` (else `root`)
names the default. A translation's route keeps its folder: `fr/guides/i18n/`."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.anchors import github
from pgcite.ingest.sites.base import Files, Site
from pgcite.ingest.sites.jsconfig import JsConfig
from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sites.locales import LocaleFolders, within
from pgcite.ingest.sites.mdx import MdxPages
from pgcite.ingest.sites.sitefiles import files_under, subfolders

__all__ = ["Starlight"]

CONTENT = "src/content/docs"
ROOT = "root"  # the locale served without a folder of its own
DEFAULT_LANGUAGE = "en"  # Starlight's language when the configuration names none


class Starlight(MdxPages, Site):
    name = "starlight"
    markers = tuple(f"astro.config.{ext}" for ext in ("mjs", "ts", "js", "mts", "cjs"))
    pages = ("*.md", "*.mdx", "*.markdown", "*.mdoc")
    levels = 5  # any folder of a language: src/content/docs/fr/guides

    @classmethod
    def detect(cls, files: Files) -> bool:
        return super().detect(files) and files.exists(CONTENT)

    def __init__(self, files: Files) -> None:
        super().__init__(files)
        self.content_dirs = (CONTENT,)
        self.locales = LocaleFolders("")
        locales, default = self._configured()
        if not locales:
            locales, default = self._found(), ROOT
        if not locales:
            return
        default_tag = locales.get(default) or locales.get(ROOT) or next(iter(locales.values()))
        folders = {key.lower(): tag for key, tag in locales.items() if key != ROOT and files.exists(f"{CONTENT}/{key}")}
        self.locales = LocaleFolders(default_tag, folders)
        self.languages, self.default_language = self.locales.narrowed(within(files.prefix, CONTENT))

    def _configured(self) -> tuple[dict[str, str], str]:
        """The `locales` the configuration names (key -> language tag) and the default's key."""
        config = JsConfig.first(self.files.read, self.markers)
        literal = config.object("locales") if config else None
        if config is None or literal is None:
            return {}, ROOT
        locales: dict[str, str] = {}
        for key, value in config.entries(literal).items():
            lang = config.string(config.entries(value).get("lang")) if value.startswith("{") else None
            # `lang` defaults to the folder's name; a root locale must say (Starlight's default: en)
            tag = language_tag(lang) or language_tag(key if key != ROOT else None)
            locales[key] = tag or (DEFAULT_LANGUAGE if key == ROOT else key.lower())
        named = config.string(config.value("defaultLocale"))
        return locales, named if named in locales else ROOT

    def _found(self) -> dict[str, str]:
        """Without `locales` in the configuration: the folders named like a language that hold
        a page of the root's (same path), as translations of the root's default language."""
        found: dict[str, str] = {}
        for folder in subfolders(self.files, CONTENT):
            tag = language_tag(folder)
            if tag and any(
                self.files.exists(f"{CONTENT}/{path}") for path in files_under(self.files, f"{CONTENT}/{folder}")
            ):
                found[folder] = tag
        return {ROOT: DEFAULT_LANGUAGE, **found} if found else {}

    def language_of(self, site_path: str) -> str:
        return self.locales.language_of(posixpath.relpath(site_path, CONTENT))

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        slug = front_matter.get("slug")
        if isinstance(slug, str):
            return slug.strip("/") + "/" if slug.strip("/") else ""
        folder, name = posixpath.split(posixpath.relpath(site_path, CONTENT))
        stem = posixpath.splitext(name)[0]
        parts = [p for p in folder.split("/") if p and p != "."]
        if stem != "index":
            parts.append(stem)
        return "/".join(github(p) for p in parts) + "/" if parts else ""
