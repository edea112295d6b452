"""Where Markdown documents come from: a folder, a .zip archive (read in place) or S3.

Every source yields `Document`, `Skipped` or `Unchanged` records sorted by path. A bad file is
`Skipped` with a one-line reason and never stops the scan; only a source that cannot
be read at all raises `SourceError`. Files that are not pages are counted (`others`), and any
file can be read on demand (`read`): a site's configuration, an included file.

Each file has a stamp from the listing alone (a folder's size, times and inode; a zip member's
size and CRC; an S3 object's size and ETag). A scan given the stamps of the files as they were
last read yields `Unchanged` for those still the same, without reading or downloading them.

A folder's includes may also be read from the project it belongs to (`include_root`): the
nearest folder at most three levels up that holds `.git` or a licence file, as a docs folder
inside a repository includes the repository's example code. Nothing is ever read from outside
that folder, from a hidden or excluded path, or through a symlink leading out of it.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Protocol

from pgcite.errors import SourceError

__all__ = [
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "Document",
    "FolderSource",
    "Limits",
    "S3Source",
    "Skipped",
    "Source",
    "Unchanged",
    "ZipSource",
    "glob_match",
    "is_excluded",
    "is_included",
    "is_remote",
    "open_source",
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
# Ratio checks only matter for members big enough to hurt; tiny files compress well too.
RATIO_MIN_BYTES = 1_000_000


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


def _split(path: str) -> list[str]:
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
    return _match_parts(_split(pattern), _split(path))


def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    """True if any pattern matches `path`.

    A pattern without "/" matches any single segment (like .gitignore), so "drafts"
    excludes every folder or file named drafts at any depth.
    """
    parts = _split(path)
    for pattern in patterns:
        if "/" in pattern.strip("/"):
            if _match_parts(_split(pattern), parts):
                return True
        elif any(fnmatchcase(part, pattern.strip("/")) for part in parts):
            return True
    return False


def _dir_excluded(rel_dir: str, patterns: Sequence[str]) -> bool:
    """True if everything under `rel_dir` is excluded, so the walk need not enter it."""
    parts = _split(rel_dir)
    for pattern in patterns:
        pat = _split(pattern)
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


def _one_line(text: str) -> str:
    # File names may contain newlines; the CLI promises one-line messages.
    return " ".join(str(text).split())


def _human(n: float) -> str:
    if n >= 1_000_000:
        value, unit = n / 1_000_000, "MB"
    elif n >= 1_000:
        value, unit = n / 1_000, "KB"
    else:
        return f"{int(n)} bytes"
    return f"{value:.1f}".rstrip("0").rstrip(".") + f" {unit}"


def _too_big(size: int, limits: Limits) -> str:
    return (
        f"file is {_human(size)}, over the {_human(limits.max_file_bytes)} limit: "
        "split it or raise PGCITE_MAX_FILE_BYTES"
    )


def _oserror_reason(err: OSError) -> str:
    return _one_line(f"cannot read file ({err.strerror or err}): check that it is readable")


def _to_record(path: str, raw: bytes, limits: Limits, stamp: str = "") -> Document | Skipped:
    """Turn raw bytes into a Document, or say why they are not Markdown text."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a name of undecodable bytes (kept as surrogates) cannot be stored
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # caf\xe9.md
        return Skipped(shown, "file name is not valid UTF-8: rename it")
    if len(raw) > limits.max_file_bytes:
        return Skipped(path, _too_big(len(raw), limits))
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


# --------------------------------------------------------------------------- folder


class _Reader:
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
            raise OSError(_too_big(len(raw), self.limits))
        return raw

    def _member(self, path: str) -> str:
        """`path` as a member of an archive or bucket: normalised, never climbing out of it."""
        parts: list[str] = []
        for part in _split(path.replace("\\", "/")):
            if part == "..":
                if not parts:
                    raise PermissionError(f"{path} is outside {self.location}")
                parts.pop()
            else:
                parts.append(part)
        member = "/".join(parts)
        if not member or is_excluded(member, self._unreadable):
            raise PermissionError(f"{path} is hidden or excluded")
        return member


_PROJECT_MARKERS = re.compile(r"^(?:\.git|licen[cs]e(?:\..*)?|copying(?:\..*)?)$", re.IGNORECASE)
PROJECT_LEVELS = 3


def _project_root(folder: str) -> str:
    """The nearest of `folder` and its PROJECT_LEVELS parents holding `.git` or a licence file,
    else `folder` itself: where includes may be read from."""
    candidate = folder
    for _ in range(PROJECT_LEVELS + 1):
        try:
            if any(_PROJECT_MARKERS.match(name) for name in os.listdir(candidate)):
                return candidate
        except OSError:
            break
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    return folder


class FolderSource(_Reader):
    """A directory walked recursively; symlinks are followed only inside the root."""

    def __init__(self, location: str, *, include_root: str | None = None, **options: Any) -> None:
        super().__init__(location, **options)
        self._root = os.path.realpath(location)
        if not os.path.isdir(self._root):
            raise SourceError(_one_line(f"no such folder: {location}: check the path"))
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
        if rel != "." and is_excluded(rel, self._unreadable):
            raise PermissionError(f"{path} is hidden or excluded")
        if not os.path.isfile(real):
            raise FileNotFoundError(f"{path} not found")
        if os.path.getsize(real) > self.limits.max_file_bytes:
            raise OSError(_too_big(os.path.getsize(real), self.limits))
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
                    _one_line(f"cannot read folder {self.location} ({err.strerror or err}): check its permissions")
                ) from None
            reason = f"cannot read folder ({err.strerror or err}): check its permissions"
            yield rel_dir, Skipped(rel_dir, _one_line(reason))
            return

        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir()  # follows symlinks
                is_link = entry.is_symlink()
            except OSError as err:
                if self._wanted(rel):
                    yield rel, Skipped(rel, _oserror_reason(err))
                continue

            if is_dir:
                # Prune only when every path below is excluded; file paths decide the rest,
                # so folders, zips and S3 agree on what a pattern means.
                if _dir_excluded(rel, self.exclude):
                    continue
                real = os.path.realpath(entry.path)
                if is_link and not self._inside(real):
                    reason = (
                        f"symlink leads outside the source folder: it points to {real}: "
                        "copy the files into the folder instead"
                    )
                    yield rel, Skipped(rel, _one_line(reason))
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
                    yield rel, Skipped(rel, _one_line(reason))
                    continue
                if not os.path.exists(entry.path):
                    yield rel, Skipped(rel, _one_line(f"broken symlink to {real}: fix or remove it"))
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
                return Skipped(rel, _too_big(st.st_size, self.limits))
            with open(abs_path, "rb") as f:
                raw = f.read(self.limits.max_file_bytes + 1)  # bounded, in case it grew
        except OSError as err:
            return Skipped(rel, _oserror_reason(err))
        return _to_record(rel, raw, self.limits, stamp)

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        # Collect first, then sort the full relative paths: sorting per directory would
        # put "a/b.md" before "a.md", which is not plain path order.
        self.others = 0
        found = sorted(self._walk(self._root, "", frozenset({self._root})), key=lambda x: x[0])
        for rel, item in found:
            yield item if isinstance(item, Skipped) else self._read(rel, item, known)


# --------------------------------------------------------------------------- zip

_DRIVE = re.compile(r"^[A-Za-z]:")


def _safe_member_path(name: str) -> str | None:
    """The member's relative POSIX path, or None if it is absolute or climbs out."""
    norm = name.replace("\\", "/")  # zips made on Windows may use backslashes
    if norm.startswith("/") or _DRIVE.match(norm):
        return None
    parts = _split(norm)
    if ".." in parts:
        return None
    return "/".join(parts)


class ZipSource(_Reader):
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
                _one_line(
                    f"not a readable zip archive: {self.location} ({err}): check the file or re-create the archive"
                )
            ) from None

    def exists(self, path: str) -> bool:
        wanted = "/".join(_split(path))
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
                by_path[info.filename] = Skipped(info.filename, _one_line(reason))
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
            return Skipped(path, _too_big(size, self.limits))
        return info

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        self.others = 0
        with self._open() as zf:
            plan = self._plan(zf)
            total = sum(i.file_size for _, i in plan if isinstance(i, zipfile.ZipInfo))
            if total > self.limits.max_total_bytes:
                raise SourceError(
                    f"zip archive {_one_line(self.location)} would expand to {_human(total)}, "
                    f"over the {_human(self.limits.max_total_bytes)} limit (possible zip bomb): "
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
                    yield Skipped(path, _one_line(reason))
                    continue
                yield _to_record(path, raw, self.limits, stamp)


# --------------------------------------------------------------------------- S3


def _parse_s3(location: str) -> tuple[str, str]:
    rest = location[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise SourceError(_one_line(f"no bucket in {location}: write it as s3://bucket or s3://bucket/prefix"))
    prefix = prefix.strip("/")
    # A prefix is a folder: "docs" must not also pick up "docs-old/...".
    return bucket, f"{prefix}/" if prefix else ""


class S3Source(_Reader):
    """Objects under s3://bucket/prefix, listed then downloaded one at a time."""

    def __init__(self, location: str, *, endpoint_url: str | None = None, **options: Any) -> None:
        super().__init__(location, **options)
        self.bucket, self.prefix = _parse_s3(location)
        self._client = self._make_client(endpoint_url)

    def _make_client(self, endpoint_url: str | None) -> Any:
        import boto3  # imported here: folder and zip users should not pay for it
        from botocore.config import Config

        # Short timeouts and few retries: an unreachable endpoint fails in seconds.
        config = Config(
            connect_timeout=5,
            read_timeout=30,
            retries={"max_attempts": 2, "mode": "standard"},
        )
        try:
            # endpoint_url=None lets boto3 read AWS_ENDPOINT_URL(_S3) and the rest itself.
            return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
        except Exception as err:  # botocore raises many types for a bad configuration
            raise SourceError(
                _one_line(
                    f"cannot set up S3 access for {self.location} ({err}): "
                    "check AWS_ENDPOINT_URL, AWS_DEFAULT_REGION and AWS_PROFILE"
                )
            ) from None

    @property
    def endpoint(self) -> str:
        return str(self._client.meta.endpoint_url)

    def _source_error(self, err: Exception) -> SourceError:
        """Translate a boto3 failure into one line that says what to do."""
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        where = f"s3://{self.bucket}/{self.prefix}"
        if isinstance(err, NoCredentialsError):
            msg = (
                f"no AWS credentials found for {where}: "
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
            )
        elif isinstance(err, (EndpointConnectionError, ConnectTimeoutError, ConnectionClosedError, ReadTimeoutError)):
            msg = f"cannot reach the S3 endpoint {self.endpoint}: check AWS_ENDPOINT_URL and your network"
        elif isinstance(err, ClientError):
            code = str(err.response.get("Error", {}).get("Code", ""))
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "NoSuchBucket" or (status == 404 and code in ("404", "NotFound")):
                msg = (
                    f"S3 bucket {self.bucket!r} does not exist at {self.endpoint}: "
                    f"check the bucket name in {self.location}"
                )
            elif code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403") or status == 403:
                msg = (
                    f"access denied to {where} ({code}): check the credentials and that "
                    "they may list and read this bucket"
                )
            else:
                text = err.response.get("Error", {}).get("Message", "") or str(err)
                msg = f"S3 error on {where} ({code}: {text}): check the location and credentials"
        else:
            msg = f"S3 error on {where} ({err}): check the location, endpoint and credentials"
        return SourceError(_one_line(msg))

    def _list(self) -> list[tuple[str, str, int, str]]:
        """(relative path, key, size, stamp) of the wanted objects, sorted by path."""
        from botocore.exceptions import BotoCoreError, ClientError

        found: dict[str, tuple[str, str, int, str]] = {}
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
            for page in pages:
                for obj in page.get("Contents", []):
                    key = str(obj["Key"])
                    if key.endswith("/"):  # "folder" placeholder objects
                        continue
                    rel = "/".join(_split(key[len(self.prefix) :]))
                    if not rel or not self._wanted(rel):
                        continue
                    size = int(obj.get("Size", 0))
                    found[rel] = (rel, key, size, f"{size}:{obj.get('ETag', '')}")
        except (BotoCoreError, ClientError) as err:
            raise self._source_error(err) from None
        return [found[p] for p in sorted(found)]

    def _get(self, rel: str, key: str, stamp: str) -> Document | Skipped:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                raw = body.read(self.limits.max_file_bytes + 1)  # bounded download
            finally:
                body.close()
        except ClientError as err:
            # One object gone or forbidden: skip it, keep the rest of the scan.
            code = err.response.get("Error", {}).get("Code", "")
            reason = f"cannot download it from S3 ({code}): check that it exists and is readable"
            return Skipped(rel, _one_line(reason))
        except BotoCoreError as err:
            raise self._source_error(err) from None
        return _to_record(rel, raw, self.limits, stamp)

    def exists(self, path: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.prefix + "/".join(_split(path))
        try:
            for prefix in (key, key + "/"):  # the file itself, or a folder of that name
                found = self._client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
                if any(o["Key"] == key or o["Key"].startswith(key + "/") for o in found.get("Contents", [])):
                    return True
        except (BotoCoreError, ClientError) as err:
            raise self._source_error(err) from None
        return False

    def read(self, path: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.prefix + self._member(path)
        try:
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                return self._bounded(path, body.read(self.limits.max_file_bytes + 1))
            finally:
                body.close()
        except ClientError:
            raise FileNotFoundError(f"{path} not found in {self.location}") from None
        except BotoCoreError as err:
            raise OSError(str(self._source_error(err))) from None

    def scan(self, known: Mapping[str, str] = {}) -> Iterator[Document | Skipped | Unchanged]:
        self.others = 0
        for rel, key, size, stamp in self._list():  # listing errors surface before any record
            if known.get(rel) == stamp:
                yield Unchanged(rel)
            elif size > self.limits.max_file_bytes:  # before downloading
                yield Skipped(rel, _too_big(size, self.limits))
            else:
                yield self._get(rel, key, stamp)


# --------------------------------------------------------------------------- factory


def is_remote(location: str) -> bool:
    """An S3 location rather than a path on this machine."""
    return location.startswith("s3://")


def open_source(
    location: str,
    *,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    include: Sequence[str] = DEFAULT_INCLUDE,
    limits: Limits = Limits(),
    include_root: str | None = None,
) -> Source:
    """Pick the source type from what the user typed."""
    kw: dict[str, Any] = {"exclude": exclude, "include": include, "limits": limits}
    if is_remote(location):
        return S3Source(location, **kw)
    if location.lower().endswith(".zip") and os.path.isfile(location):
        return ZipSource(location, **kw)
    if os.path.isdir(location):
        return FolderSource(location, include_root=include_root, **kw)
    raise SourceError(
        _one_line(
            f"no such folder, .zip file or s3:// location: {location}: "
            "give a folder path, a .zip file or s3://bucket/prefix"
        )
    )
