"""Where Markdown documents come from, and what every source shares: the records a scan yields,
the limits, the include/exclude globs and the base reader. The sources themselves are folder.py,
zipped.py (a .zip read in place) and s3.py; locations.py opens one from what the user typed.

Every source yields `Document`, `Skipped` or `Unchanged` records sorted by path. A bad file is
`Skipped` with a one-line reason and never stops the scan; only a source that cannot
be read at all raises `SourceError`. Files that are not pages are counted (`others`), and any
file can be read on demand (`read`): a site's configuration, an included file.

Each file has a stamp from the listing alone (a folder's size, times and inode; a zip member's
size and CRC; an S3 object's size and ETag). A scan given the stamps of the files as they were
last read yields `Unchanged` for those still the same, without reading or downloading them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Protocol

__all__ = [
    "BINARY_SNIFF_BYTES",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "HIDDEN_CONFIGS",
    "Document",
    "Limits",
    "Reader",
    "Skipped",
    "Source",
    "Unchanged",
    "dir_excluded",
    "glob_match",
    "human_size",
    "is_excluded",
    "is_included",
    "one_line",
    "oserror_reason",
    "split_path",
    "to_record",
    "too_big",
]


@dataclass(frozen=True)
class Document:
    path: str  # POSIX path relative to the source root, e.g. "guide/intro.md"
    text: str  # decoded UTF-8 text (a leading BOM stripped)
    checksum: str  # sha256 hex of the raw bytes
    stamp: str = field(default="", compare=False)  # the listing's mark of the file (module docstring)


@dataclass(frozen=True)
class Unchanged:
    """A file whose stamp is the one given to `scan`: not read."""

    path: str


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str  # one line: what is wrong, then what to do


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 5_000_000  # a single file larger than this is Skipped
    max_total_bytes: int = 1_000_000_000  # zip: total uncompressed size cap -> SourceError
    max_ratio: float = 200.0  # zip: per-member compression ratio cap -> member Skipped


DEFAULT_INCLUDE: tuple[str, ...] = ("*.md", "*.markdown", "*.mdx")
# `**` matches zero or more segments, so these cover the top level and any depth.
# "**/.*" catches hidden files as well as hidden folders.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "**/.vitepress/**",
    "**/dist/**",
    "**/node_modules/**",
    "**/.*/**",
    "**/.*",
)

BINARY_SNIFF_BYTES = 8192
# Hidden files a site's configuration may be (`read` serves them; they are never pages): Read the
# Docs' build settings, which say a Sphinx site's builder.
HIDDEN_CONFIGS = frozenset({".readthedocs.yaml", ".readthedocs.yml"})


class Source(Protocol):
    location: str  # what the user typed (folder path, zip path, s3://bucket/prefix)
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    others: int  # files the last scan saw that are not pages (counted, not read)

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        """Every page; `known` maps a path to the stamp it had when last read."""
        ...

    def read(self, path: str) -> bytes:
        """The bytes of any file, `path` relative to the source root; OSError with a one-line
        reason when it is missing, too big, or out of bounds."""
        ...

    def exists(self, path: str) -> bool:
        """Whether a file or folder is there (a site's marker), wherever it is."""
        ...


# --------------------------------------------------------------------------- globs


def split_path(path: str) -> list[str]:
    return [p for p in path.strip("/").split("/") if p not in ("", ".")]


def _match_parts(pat: list[str], parts: list[str]) -> bool:
    if not pat:
        return not parts
    if pat[0] == "**":
        rest = pat[1:]
        while rest and rest[0] == "**":  # "**/**" is the same as "**"
            rest = rest[1:]
        return any(_match_parts(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pat[0]) and _match_parts(pat[1:], parts[1:])


def glob_match(pattern: str, path: str) -> bool:
    """Match a POSIX relative path against a glob, segment by segment.

    `*`, `?` and `[...]` never cross a "/"; a `**` segment matches zero or more
    segments, so "drafts/**" matches "drafts/a.md" and "drafts/x/y.md".
    The pattern is anchored at the source root.
    """
    return _match_parts(split_path(pattern), split_path(path))


def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    """True if any pattern matches `path`.

    A pattern without "/" matches any single segment (like .gitignore), so "drafts"
    excludes every folder or file named drafts at any depth.
    """
    parts = split_path(path)
    for pattern in patterns:
        if "/" in pattern.strip("/"):
            if _match_parts(split_path(pattern), parts):
                return True
        elif any(fnmatchcase(part, pattern.strip("/")) for part in parts):
            return True
    return False


def dir_excluded(rel_dir: str, patterns: Sequence[str]) -> bool:
    """True if everything under `rel_dir` is excluded, so the walk need not enter it."""
    parts = split_path(rel_dir)
    for pattern in patterns:
        pat = split_path(pattern)
        if len(pat) == 1:
            if parts and fnmatchcase(parts[-1], pat[0]):
                return True
        # "X/**" matches anything below a folder matching X.
        elif pat and pat[-1] == "**" and _match_parts(pat[:-1], parts):
            return True
    return False


def is_included(path: str, patterns: Sequence[str]) -> bool:
    """Match the file name, ignoring case (so NOTES.MD counts as Markdown).

    A pattern containing "/" is matched against the whole relative path instead.
    """
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        if "/" in pattern:
            if glob_match(pattern, path):
                return True
        elif fnmatchcase(name.lower(), pattern.lower()):
            return True
    return False


# --------------------------------------------------------------------------- helpers


def one_line(text: str) -> str:
    # File names may contain newlines; the CLI promises one-line messages.
    return " ".join(str(text).split())


def human_size(n: float) -> str:
    if n >= 1_000_000:
        value, unit = n / 1_000_000, "MB"
    elif n >= 1_000:
        value, unit = n / 1_000, "KB"
    else:
        return f"{int(n)} bytes"
    return f"{value:.1f}".rstrip("0").rstrip(".") + f" {unit}"


def too_big(size: int, limits: Limits) -> str:
    return (
        f"file is {human_size(size)}, over the {human_size(limits.max_file_bytes)} limit: "
        "split it or raise PGCITE_MAX_FILE_BYTES"
    )


def oserror_reason(err: OSError) -> str:
    return one_line(f"cannot read file ({err.strerror or err}): check that it is readable")


def to_record(path: str, raw: bytes, limits: Limits, stamp: str = "") -> Document | Skipped:
    """Turn raw bytes into a Document, or say why they are not Markdown text."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a name of undecodable bytes (kept as surrogates) cannot be stored
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # caf\xe9.md
        return Skipped(shown, "file name is not valid UTF-8: rename it")
    if len(raw) > limits.max_file_bytes:
        return Skipped(path, too_big(len(raw), limits))
    if not raw.strip():
        return Skipped(path, "empty file")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return Skipped(path, "UTF-16 text, not UTF-8: save it as UTF-8")
    if (nul := raw.find(b"\x00")) >= 0:
        return Skipped(
            path,
            "binary file, not Markdown text"
            if nul < BINARY_SNIFF_BYTES
            else f"a NUL byte at offset {nul}, which text cannot hold: remove it",
        )
    # Strip the BOM ourselves (not "utf-8-sig") so error offsets count from byte 0.
    bom = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    try:
        text = raw[bom:].decode("utf-8")
    except UnicodeDecodeError as err:
        return Skipped(path, f"not UTF-8 text (invalid byte at offset {err.start + bom}): save it as UTF-8")
    if not text.strip():
        return Skipped(path, "empty file")
    return Document(path, text, hashlib.sha256(raw).hexdigest(), stamp)


# --------------------------------------------------------------------------- reader


class Reader:
    """What every source shares: where it is, which paths it reads, and its limits."""

    def __init__(
        self,
        location: str,
        *,
        exclude: Sequence[str] = DEFAULT_EXCLUDE,
        include: Sequence[str] = DEFAULT_INCLUDE,
        limits: Limits = Limits(),
    ) -> None:
        self.location = location
        self.exclude = tuple(exclude)
        # What `read` refuses: the exclusions the source was opened with (hidden files, the user's
        # --exclude), not the patterns a site adds for files that are not pages (partials).
        self._unreadable = tuple(exclude)
        self.include = tuple(include)
        self.limits = limits
        self.others = 0

    def unreadable(self, rel: str) -> bool:
        """Whether `read` refuses `rel`: hidden or excluded, except a site's hidden configuration
        file (HIDDEN_CONFIGS) outside hidden folders."""
        if not is_excluded(rel, self._unreadable):
            return False
        folder, _, name = rel.rpartition("/")
        return name not in HIDDEN_CONFIGS or (bool(folder) and is_excluded(folder, self._unreadable))

    def _wanted(self, rel: str) -> bool:
        """A page to read; a file that is neither a page nor excluded is counted in `others`."""
        if is_excluded(rel, self.exclude):
            return False
        if is_included(rel, self.include):
            return True
        self.others += 1
        return False

    def _bounded(self, path: str, raw: bytes) -> bytes:
        if len(raw) > self.limits.max_file_bytes:
            raise OSError(too_big(len(raw), self.limits))
        return raw

    def _member(self, path: str) -> str:
        """`path` as a member of an archive or bucket: normalised, never climbing out of it."""
        parts: list[str] = []
        for part in split_path(path.replace("\\", "/")):
            if part == "..":
                if not parts:
                    raise PermissionError(f"{path} is outside {self.location}")
                parts.pop()
            else:
                parts.append(part)
        member = "/".join(parts)
        if not member or self.unreadable(member):
            raise PermissionError(f"{path} is hidden or excluded")
        return member
