"""A folder on this machine as a source: walked recursively, each file stamped from `stat`, and
nothing read outside the folder's bounds.

A folder's includes may also be read from the project it belongs to (`include_root`): the
nearest folder at most three levels up that holds `.git`, else Read the Docs' settings (which live
at a repository's root), else a licence file, as a docs folder inside a repository includes the
repository's example code. Nothing is ever read from outside
that folder, from a hidden or excluded path, or through a symlink leading out of it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from pgcite.errors import SourceError
from pgcite.ingest.sources import (
    Document,
    Reader,
    Skipped,
    Unchanged,
    dir_excluded,
    one_line,
    oserror_reason,
    to_record,
    too_big,
)

__all__ = ["PROJECT_LEVELS", "FolderSource"]


_PROJECT_MARKERS = re.compile(r"^(?:\.git|licen[cs]e(?:\..*)?|copying(?:\..*)?)$", re.IGNORECASE)
_REPOSITORY_SETTINGS = frozenset({".readthedocs.yaml", ".readthedocs.yml"})  # Read the Docs reads them at the root
PROJECT_LEVELS = 3


def _project_root(folder: str) -> str:
    """The nearest of `folder` and its PROJECT_LEVELS parents holding `.git`, else the nearest
    holding Read the Docs' settings, else the nearest holding a licence file, else `folder`
    itself: where includes may be read from. `.git` first (a docs folder may hold settings of its
    own), a licence last: a docs folder may hold a licence page of its own (Flask's
    docs/license.rst). An exported tree or a zip has no `.git`."""
    chain = [folder]
    while len(chain) <= PROJECT_LEVELS and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    listings = []
    for candidate in chain:
        try:
            listings.append((candidate, os.listdir(candidate)))
        except OSError:
            break
    for wanted in (lambda name: name == ".git", lambda name: name in _REPOSITORY_SETTINGS, _PROJECT_MARKERS.match):
        for candidate, names in listings:
            if any(wanted(name) for name in names):
                return candidate
    return folder


class FolderSource(Reader):
    """A directory walked recursively; symlinks are followed only inside the root."""

    def __init__(self, location: str, *, include_root: str | None = None, **options: Any) -> None:
        super().__init__(location, **options)
        real = os.path.realpath(location)
        # One file given alone (an API description): its folder is the root, the file its one page.
        self.single = os.path.basename(real) if os.path.isfile(real) else ""
        self._root = os.path.dirname(real) if self.single else real
        if not os.path.isdir(self._root):
            raise SourceError(one_line(f"no such folder: {location}: check the path"))
        self.include_root = os.path.realpath(include_root) if include_root else _project_root(self._root)

    @property
    def root(self) -> str:
        return self._root

    def _inside(self, real: str, root: str | None = None) -> bool:
        root = root or self._root
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def exists(self, path: str) -> bool:
        return os.path.exists(os.path.join(self._root, path))

    def allow(self, folder: str) -> None:
        """Let includes be read from `folder` too (the site root above the ingested folder)."""
        real = os.path.realpath(os.path.join(self._root, folder))
        while not self._inside(real, self.include_root) and not self._inside(self.include_root, real):
            real = os.path.dirname(real)
        if self._inside(self.include_root, real):
            self.include_root = real

    def read(self, path: str) -> bytes:
        real = os.path.realpath(os.path.join(self._root, path))
        if not self._inside(real, self.include_root):
            raise PermissionError(f"{path} is outside {self.include_root}")
        rel = os.path.relpath(real, self.include_root).replace(os.sep, "/")
        if rel != "." and self.unreadable(rel):
            raise PermissionError(f"{path} is hidden or excluded")
        if not os.path.isfile(real):
            raise FileNotFoundError(f"{path} not found")
        if os.path.getsize(real) > self.limits.max_file_bytes:
            raise OSError(too_big(os.path.getsize(real), self.limits))
        with open(real, "rb") as f:
            return self._bounded(path, f.read(self.limits.max_file_bytes + 1))

    def _walk(self, abs_dir: str, rel_dir: str, ancestors: frozenset[str]) -> Iterator[tuple[str, str | Skipped]]:
        """Yield (relative path, absolute file path or Skipped), in no particular order."""
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            if not rel_dir:
                raise SourceError(
                    one_line(f"cannot read folder {self.location} ({err.strerror or err}): check its permissions")
                ) from None
            reason = f"cannot read folder ({err.strerror or err}): check its permissions"
            yield rel_dir, Skipped(rel_dir, one_line(reason))
            return

        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir()  # follows symlinks
                is_link = entry.is_symlink()
            except OSError as err:
                if self._wanted(rel):
                    yield rel, Skipped(rel, oserror_reason(err))
                continue

            if is_dir:
                # Prune only when every path below is excluded; file paths decide the rest,
                # so folders, zips and S3 agree on what a pattern means.
                if dir_excluded(rel, self.exclude):
                    continue
                real = os.path.realpath(entry.path)
                if is_link and not self._inside(real):
                    reason = (
                        f"symlink leads outside the source folder: it points to {real}: "
                        "copy the files into the folder instead"
                    )
                    yield rel, Skipped(rel, one_line(reason))
                elif real in ancestors:
                    yield rel, Skipped(rel, "symlink loop: it points back to a parent folder")
                else:
                    yield from self._walk(entry.path, rel, ancestors | {real})
                continue

            if not self._wanted(rel):
                continue
            if is_link:
                real = os.path.realpath(entry.path)
                if not self._inside(real):
                    reason = (
                        f"symlink leads outside the source folder: it points to {real}: "
                        "copy the file into the folder instead"
                    )
                    yield rel, Skipped(rel, one_line(reason))
                    continue
                if not os.path.exists(entry.path):
                    yield rel, Skipped(rel, one_line(f"broken symlink to {real}: fix or remove it"))
                    continue
            yield rel, entry.path

    def _read(self, rel: str, abs_path: str, known: Mapping[str, str]) -> Document | Skipped | Unchanged:
        try:
            st = os.stat(abs_path)
            # ctime and the inode change whatever a tool does to the mtime (an editor saving by rename).
            stamp = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
            if known.get(rel) == stamp:
                return Unchanged(rel)
            if not stat.S_ISREG(st.st_mode):
                # A FIFO or device named *.md would block or never end.
                return Skipped(rel, "not a regular file: replace it with a normal file")
            if st.st_size > self.limits.max_file_bytes:  # before reading anything
                return Skipped(rel, too_big(st.st_size, self.limits))
            with open(abs_path, "rb") as f:
                raw = f.read(self.limits.max_file_bytes + 1)  # bounded, in case it grew
        except OSError as err:
            return Skipped(rel, oserror_reason(err))
        return to_record(rel, raw, self.limits, stamp)

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        # Collect first, then sort the full relative paths: sorting per directory would
        # put "a/b.md" before "a.md", which is not plain path order.
        self.others = 0
        if self.single:
            yield self._read(self.single, os.path.join(self._root, self.single), known)
            return
        found = sorted(self._walk(self._root, "", frozenset({self._root})), key=lambda x: x[0])
        for rel, item in found:
            yield item if isinstance(item, Skipped) else self._read(rel, item, known)
