"""Where a docs task can be filed: the GitHub or GitLab repository a source's docs come from, when it is
known, and a prefilled "new issue" link to it.

A repository is known from the source's base URL (a page on github.com or gitlab.com, or a GitHub or
GitLab Pages site: OWNER.github.io/REPO) or, for a folder ingested with `--pull` (a clone), from its
`origin` remote in .git/config. Nothing else is guessed: no repository, no link. A remote's user and
token are never kept."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

MAX_URL_CHARS = 6000  # browsers and both hosts take far longer links; the body is cut to fit
_PAGES = {"github.io": "github", "gitlab.io": "gitlab"}
_REMOTE = re.compile(r'^\s*\[remote\s+"origin"\]\s*$(.*?)(?=^\s*\[|\Z)', re.M | re.S)
_URL_LINE = re.compile(r"^\s*url\s*=\s*(\S+)\s*$", re.M)
_SCP = re.compile(r"^(?:[^@/\s]+@)?([A-Za-z0-9.-]+):(?!//)([^\s]+)$")  # git@github.com:owner/repo.git
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Repository:
    host: str  # "github" or "gitlab"
    url: str  # https://github.com/OWNER/REPO, https://gitlab.com/GROUP/SUB/PROJECT

    def new_issue(self, title: str, body: str) -> str:
        """A link that opens the host's new-issue form with the title and body filled in."""
        base, fields = (
            (f"{self.url}/issues/new", ("title", "body"))
            if self.host == "github"
            else (f"{self.url}/-/issues/new", ("issue[title]", "issue[description]"))
        )
        while True:
            link = f"{base}?{urllib.parse.urlencode({fields[0]: title[:200], fields[1]: body})}"
            if len(link) <= MAX_URL_CHARS or len(body) < 200:
                return link
            body = body[: len(body) * 3 // 4].rstrip() + "\n…"


def _of_url(url: str) -> Repository | None:
    """The repository of an https URL on github.com, gitlab.com or their Pages sites."""
    parts = urllib.parse.urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    segments = [s for s in parts.path.split("/") if s]
    if segments:
        segments[-1] = segments[-1].removesuffix(".git")
    if host in ("github.com", "www.github.com") and len(segments) >= 2:
        found = ("github", "https://github.com", segments[:2])
    elif host in ("gitlab.com", "www.gitlab.com") and len(segments) >= 2:
        group = segments[: segments.index("-")] if "-" in segments else segments  # .../-/blob/main/...
        found = ("gitlab", "https://gitlab.com", group)
    elif (pages := host.split(".", 1)) and len(pages) == 2 and pages[1] in _PAGES:
        owner, kind = pages[0], _PAGES[pages[1]]
        found = (kind, f"https://{kind}.com", [owner, segments[0] if segments else f"{owner}.{pages[1]}"])
    else:
        return None
    kind, root, path = found
    if len(path) < 2 or not all(_NAME.match(s) for s in path):
        return None
    return Repository(kind, f"{root}/{'/'.join(path)}")


def of_remote(remote: str) -> Repository | None:
    """The repository of a git remote URL (https, ssh:// or git@host:path), its credentials dropped."""
    remote = remote.strip()
    if match := _SCP.match(remote):
        remote = f"https://{match[1]}/{match[2]}"
    parts = urllib.parse.urlsplit(remote)
    if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname:
        return None
    return _of_url(f"https://{parts.hostname}{parts.path}")


def _clone_remote(folder: str) -> str:
    """The origin remote of the clone holding `folder` (up to three folders up), or ""."""
    try:
        here = Path(folder).resolve()
        for candidate in [here, *here.parents][:4]:
            config = candidate / ".git" / "config"
            if config.is_file():
                section = _REMOTE.search(config.read_text(encoding="utf-8", errors="replace")[:100_000])
                line = _URL_LINE.search(section[1]) if section else None
                return line[1] if line else ""
    except OSError:
        return ""
    return ""


def repository(base_url: str, location: str, options: dict | None) -> Repository | None:
    """The repository a source's docs come from, when its base URL or its clone says (module docstring)."""
    if found := _of_url(base_url) if base_url else None:
        return found
    if (options or {}).get("pull") and (remote := _clone_remote(location)):
        return of_remote(remote)
    return None
