"""Languages kept in folders (`fr/`, `pt-br/` beside the default language's pages): a page's
language from its path, and the languages of the part of a site that is ingested, whose default
always has pages (ingesting `docs/fr` alone answers in French by default)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["LocaleFolders", "narrow", "within"]


def narrow(default: str, present: Iterable[str]) -> tuple[tuple[str, ...], str]:
    """(languages, default language) of the pages ingested: `present` in order, the site's
    default first when it is among them, else the first of them is the default."""
    tags = [tag for tag in dict.fromkeys(present) if tag]
    if default in tags:
        tags.remove(default)
        tags.insert(0, default)
    return tuple(tags), (tags[0] if tags else default)


@dataclass(frozen=True)
class LocaleFolders:
    default: str  # the language of pages outside every locale folder ("" when the site names none)
    folders: dict[str, str] = field(default_factory=dict)  # folder (lower case) -> language tag

    def language_of(self, path: str) -> str:
        """The language of a page, from its path relative to the content folder."""
        return self.folders.get(path.split("/", 1)[0].lower(), self.default)

    def narrowed(self, within: str | None) -> tuple[tuple[str, ...], str]:
        """(languages, default language) of the pages under `within`, a folder relative to the
        content folder ("" or None: all of it)."""
        if not within or within == ".":
            return narrow(self.default, [self.default, *self.folders.values()])
        return narrow(self.default, [self.language_of(within)])


def within(prefix: str, content: str) -> str:
    """The ingested folder `prefix` relative to the content folder `content` (both site paths):
    "" when it is the content folder or holds it."""
    if not content:
        return prefix
    return prefix[len(content) + 1 :] if prefix.startswith(content + "/") else ""
