"""A site's own files beyond what a source hands out: its folders listed where the source can
list them (a folder, a zip; S3 lists nothing here, so only what a configuration names is found
there), and a configuration file kept in a hidden folder (`.vitepress/config.ts`), which a
source refuses to read like any hidden file."""

from __future__ import annotations

import os
import posixpath
import zipfile

from pgcite.ingest.folder import FolderSource
from pgcite.ingest.sites.base import Files
from pgcite.ingest.zipped import ZipSource

__all__ = ["files_under", "read_hidden", "subfolders"]

MAX_LISTED = 10_000  # files looked at under one folder: enough to tell a layout, bounded


def _names(files: Files, site_path: str, deep: bool = True) -> list[str] | None:
    """Paths of the files under the site folder `site_path`, relative to it (or, not `deep`,
    one path under each folder directly in it); None where the source cannot list."""
    source = files.source
    rel = posixpath.normpath(files.to_source(site_path.strip("/") or "."))
    found: list[str] = []
    if isinstance(source, FolderSource):
        top = os.path.realpath(os.path.join(source.root, rel))
        bound = source.include_root.rstrip(os.sep) + os.sep
        if not (top + os.sep).startswith(bound) or not os.path.isdir(top):
            return found
        if not deep:
            with os.scandir(top) as entries:
                return [f"{e.name}/" for e in entries if e.is_dir()]
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.relpath(os.path.join(folder, n), top).replace(os.sep, "/") for n in sorted(names)]
            if len(found) >= MAX_LISTED:
                break
        return found[:MAX_LISTED]
    if isinstance(source, ZipSource):
        prefix = "" if rel == "." else rel + "/"
        try:
            with zipfile.ZipFile(source.location) as zf:
                members = [n.replace("\\", "/") for n in zf.namelist()]
        except (zipfile.BadZipFile, OSError):
            return found
        found = [n[len(prefix) :] for n in members if n.startswith(prefix) and not n.endswith("/")]
        return sorted(found)[:MAX_LISTED]
    return None


def subfolders(files: Files, site_path: str) -> tuple[str, ...]:
    """The names of the folders directly in `site_path` (not hidden), sorted."""
    names = _names(files, site_path, deep=False) or []
    return tuple(sorted({n.split("/", 1)[0] for n in names if "/" in n and not n.startswith((".", "_"))}))


def files_under(files: Files, site_path: str) -> tuple[str, ...]:
    """The files under `site_path`, relative to it (at most MAX_LISTED)."""
    return tuple(_names(files, site_path) or [])


def read_hidden(files: Files, site_path: str) -> str:
    """The text of a configuration file in a hidden folder of the site: read as the source
    reads (inside its bounds, through no symlink out, within its size limit) but not refused
    for being hidden. OSError when it is missing or out of bounds."""
    try:
        return files.read(site_path)
    except PermissionError:
        pass
    source = files.source
    rel = posixpath.normpath(files.to_source(site_path))
    if isinstance(source, FolderSource):
        real = os.path.realpath(os.path.join(source.root, rel))
        if not real.startswith(source.include_root.rstrip(os.sep) + os.sep) or not os.path.isfile(real):
            raise FileNotFoundError(f"{site_path} not found")
        if os.path.getsize(real) > source.limits.max_file_bytes:
            raise OSError(f"{site_path} is too big")
        with open(real, "rb") as f:
            raw = f.read()
    elif isinstance(source, ZipSource):
        try:
            with zipfile.ZipFile(source.location) as zf:
                info = zf.getinfo(rel)
                if info.file_size > source.limits.max_file_bytes:
                    raise OSError(f"{site_path} is too big")
                raw = zf.read(info)
        except (KeyError, zipfile.BadZipFile) as err:
            raise FileNotFoundError(f"{site_path} not found") from err
    else:
        raise FileNotFoundError(f"{site_path} not found")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise OSError(f"{site_path} is not UTF-8 text") from None
