"""MkDocs languages: `theme.language` (Material) or `theme.locale` (MkDocs's own themes) is the
site's language; the mkdocs-static-i18n plugin adds translations, each language's pages in
`docs/<locale>/` (`docs_structure: folder`) or beside the default's as `page.<locale>.md`
(`suffix`, its default), published under `/<locale>/` (the default language at the root)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sites.locales import narrow

__all__ = ["Languages", "read_languages"]

PLUGIN = "i18n"


@dataclass(frozen=True)
class Languages:
    """What the configuration says of languages: the default's tag, and with the plugin its
    locales (as written, `pt_BR`: they name folders, suffixes and URLs) and their tags."""

    default: str = ""
    default_locale: str = ""
    locales: dict[str, str] = field(default_factory=dict)  # locale as written -> tag, the default first
    structure: str = "suffix"

    def split(self, path: str) -> tuple[str, str]:
        """(locale as written, "" for the default; the page's path as the default's would be),
        for a path relative to docs_dir."""
        if not self.locales:
            return "", path
        if self.structure == "folder":
            first, _, rest = path.partition("/")
            if rest and first in self.locales:
                return ("" if first == self.default_locale else first), rest
            return "", path
        folder, name = posixpath.split(path)
        stem, ext = posixpath.splitext(name)
        base, dot, locale = stem.rpartition(".")
        if dot and base and locale in self.locales:
            return ("" if locale == self.default_locale else locale), posixpath.join(folder, base + ext)
        return "", path

    def tag(self, locale: str) -> str:
        return self.locales.get(locale, self.default) if locale else self.default

    def narrowed(self, inside: str) -> tuple[tuple[str, ...], str]:
        """(languages, default language) of the pages under `inside`, a folder relative to
        docs_dir ("": all): one language's folder holds that language only."""
        if inside and self.structure == "folder" and self.locales:
            return narrow(self.default, [self.tag(self.split(inside + "/page.md")[0])])
        return narrow(self.default, [self.default, *self.locales.values()])


def _plugin(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    plugins = config.get("plugins")
    if isinstance(plugins, Mapping):  # MkDocs takes a mapping of plugins too (FastAPI's form)
        found = (plugins[PLUGIN] or {}) if PLUGIN in plugins else None
    elif isinstance(plugins, list):
        found = next(
            (item[PLUGIN] or {} for item in plugins if isinstance(item, Mapping) and PLUGIN in item),
            {} if PLUGIN in plugins else None,
        )
    else:
        return None
    return found if isinstance(found, Mapping) else None


def read_languages(config: Mapping[str, Any]) -> Languages:
    theme = config.get("theme")
    theme_language = theme.get("language") or theme.get("locale") if isinstance(theme, Mapping) else None
    site_tag = language_tag(theme_language) or ""
    plugin = _plugin(config)
    if plugin is None:
        return Languages(site_tag, str(theme_language or ""))
    listed = plugin.get("languages")
    default_locale = ""
    locales: dict[str, str] = {}
    if isinstance(listed, list):  # 1.x: - locale: fr / default: true
        for item in listed:
            if isinstance(item, Mapping) and isinstance(item.get("locale"), str) and item["locale"] != "null":
                locales[item["locale"]] = language_tag(item["locale"]) or item["locale"].lower()
                if item.get("default") is True and not default_locale:
                    default_locale = item["locale"]
    elif isinstance(listed, Mapping):  # 0.x: default_language: en / languages: {fr: Français}
        locales = {str(k): language_tag(str(k)) or str(k).lower() for k in listed}
        default_locale = str(plugin.get("default_language") or "")
        if default_locale:
            locales.setdefault(default_locale, language_tag(default_locale) or default_locale.lower())
    if not locales:
        return Languages(site_tag, str(theme_language or ""))
    default_locale = default_locale or next(iter(locales))
    ordered = {default_locale: locales[default_locale], **locales}
    structure = "folder" if plugin.get("docs_structure") == "folder" else "suffix"
    return Languages(ordered[default_locale], default_locale, ordered, structure)
