"""Release notes and changelogs, told apart from guide pages so that search can rank them below
the guides for questions that are not about a release (retrieval.is_release_question)."""

from __future__ import annotations

import posixpath
import re

from pgcite.ingest.markdown import ParsedDocument

__all__ = ["is_changelog"]

_NAME = re.compile(r"^(?:release[-_ ]?notes?|releases|change[-_ ]?log|changes|history|whats?[-_ ]?new)$", re.IGNORECASE)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
# "0.115.0", "v2.1", "[1.2.3] - 2024-01-01", "Version 3", "June 20th, 2024", "2024-06-20".
_RELEASE_HEADING = re.compile(
    rf"^(?:\[?v?\d+(?:\.\d+)+\b|(?:version|release)\s+v?\d|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|\d{{1,2}}\s+{_MONTH}\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})",
    re.IGNORECASE,
)
MIN_RELEASE_HEADINGS = 3
RELEASE_SHARE = 0.6


def is_changelog(site_path: str, parsed: ParsedDocument) -> bool:
    """By path (release-notes.md, CHANGELOG.md, a release-notes/ folder...) or by shape: most
    of the page's top-level headings are versions or dates."""
    folders, name = posixpath.split(site_path)
    stem = posixpath.splitext(name)[0]
    if _NAME.match(stem) or any(_NAME.match(part) for part in folders.split("/") if part):
        return True
    tops = list(dict.fromkeys(s.heading_path[0] for s in parsed.sections if s.heading_path))
    releases = sum(1 for heading in tops if _RELEASE_HEADING.match(heading))
    return releases >= MIN_RELEASE_HEADINGS and releases >= RELEASE_SHARE * len(tops)
