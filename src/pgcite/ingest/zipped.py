"""A .zip archive as a source, read in place: members checked from their declared sizes before
any is inflated (encryption, zip bombs, unsafe paths), stamped by size and CRC."""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

from pgcite.errors import SourceError
from pgcite.ingest.sources import (
    Document,
    Reader,
    Skipped,
    Unchanged,
    human_size,
    one_line,
    split_path,
    to_record,
    too_big,
)

__all__ = ["RATIO_MIN_BYTES", "ZipSource"]

# Ratio checks only matter for members big enough to hurt; tiny files compress well too.
RATIO_MIN_BYTES = 1_000_000

_DRIVE = re.compile(r"^[A-Za-z]:")


def _safe_member_path(name: str) -> str | None:
    """The member's relative POSIX path, or None if it is absolute or climbs out."""
    norm = name.replace("\\", "/")  # zips made on Windows may use backslashes
    if norm.startswith("/") or _DRIVE.match(norm):
        return None
    parts = split_path(norm)
    if ".." in parts:
        return None
    return "/".join(parts)


class ZipSource(Reader):
    """A .zip archive read in place with `zipfile`; nothing is extracted to disk."""

    def __init__(self, location: str, **options: Any) -> None:
        super().__init__(location, **options)
        with self._open():  # fail now on a corrupt archive, not halfway through a run
            pass

    def _open(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.location)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as err:
            raise SourceError(
                one_line(
                    f"not a readable zip archive: {self.location} ({err}): check the file or re-create the archive"
                )
            ) from None

    def exists(self, path: str) -> bool:
        wanted = "/".join(split_path(path))
        with self._open() as zf:
            return any(
                name == wanted or name.startswith(wanted + "/")
                for name in (n.replace("\\", "/").strip("/") for n in zf.namelist())
            )

    def read(self, path: str) -> bytes:
        member = self._member(path)
        with self._open() as zf:
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise FileNotFoundError(f"{path} not found in {self.location}") from None
            checked = self._check(member, info)
            if isinstance(checked, Skipped):
                raise OSError(checked.reason)
            try:
                with zf.open(info) as f:
                    return self._bounded(path, f.read(self.limits.max_file_bytes + 1))
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
                raise OSError(f"cannot read {path} from the zip ({err})") from None

    def _plan(self, zf: zipfile.ZipFile) -> list[tuple[str, zipfile.ZipInfo | Skipped]]:
        by_path: dict[str, zipfile.ZipInfo | Skipped] = {}
        for info in zf.infolist():
            if info.is_dir() or info.filename.replace("\\", "/").endswith("/"):
                continue
            path = _safe_member_path(info.filename)
            if path is None:
                # Reported whatever its name: a path like that means a tampered archive.
                reason = f"unsafe path in zip (absolute or '..'): {info.filename}"
                by_path[info.filename] = Skipped(info.filename, one_line(reason))
                continue
            if not path or not self._wanted(path):
                continue
            # A name listed twice: the later entry wins, as when unzipping.
            by_path[path] = self._check(path, info)
        return sorted(by_path.items(), key=lambda x: x[0])

    def _check(self, path: str, info: zipfile.ZipInfo) -> zipfile.ZipInfo | Skipped:
        """Decide from the declared sizes alone whether the member may be read."""
        if info.flag_bits & 0x1:
            return Skipped(path, "encrypted in the zip: re-create the archive without a password")
        size, packed = info.file_size, info.compress_size
        if size > RATIO_MIN_BYTES:
            ratio = size / packed if packed else float("inf")
            if ratio > self.limits.max_ratio:
                return Skipped(
                    path,
                    f"compressed {ratio:.0f}x, over the {self.limits.max_ratio:g}x limit "
                    "(possible zip bomb): if the file is genuine, ingest it from a folder",
                )
        if size > self.limits.max_file_bytes:
            return Skipped(path, too_big(size, self.limits))
        return info

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        self.others = 0
        with self._open() as zf:
            plan = self._plan(zf)
            total = sum(i.file_size for _, i in plan if isinstance(i, zipfile.ZipInfo))
            if total > self.limits.max_total_bytes:
                raise SourceError(
                    f"zip archive {one_line(self.location)} would expand to {human_size(total)}, "
                    f"over the {human_size(self.limits.max_total_bytes)} limit (possible zip bomb): "
                    "zip only the documentation folder"
                )
            for path, item in plan:
                if isinstance(item, Skipped):
                    yield item
                    continue
                stamp = f"{item.file_size}:{item.CRC:08x}"
                if known.get(path) == stamp:
                    yield Unchanged(path)
                    continue
                try:
                    with zf.open(item) as f:
                        # Bounded: a header that lies about the size cannot blow memory.
                        raw = f.read(self.limits.max_file_bytes + 1)
                except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError) as err:
                    reason = f"cannot read it from the zip ({err}): re-create the archive"
                    yield Skipped(path, one_line(reason))
                    continue
                yield to_record(path, raw, self.limits, stamp)
