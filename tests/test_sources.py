"""Tests for the ingest sources (folders, zip archives read in place, S3 on a real moto server) and their globs."""

from __future__ import annotations

import hashlib
import os
import socket
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgcite.errors import SourceError
from pgcite.ingest import folder
from pgcite.ingest.folder import FolderSource
from pgcite.ingest.locations import open_source
from pgcite.ingest.s3 import S3Source
from pgcite.ingest.sources import (
    DEFAULT_EXCLUDE,
    Document,
    Limits,
    Skipped,
    glob_match,
    is_excluded,
    is_included,
)
from pgcite.ingest.zipped import ZipSource


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def by_path(records: list[Document | Skipped]) -> dict[str, Document | Skipped]:
    out = {r.path: r for r in records}
    assert len(out) == len(records), "a path was reported twice"
    return out


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- globs


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("drafts/**", "drafts/a.md", True),
        ("drafts/**", "drafts/x/y/z.md", True),
        ("drafts/**", "guide/drafts/a.md", False),  # anchored at the root
        ("drafts/**", "draftsy/a.md", False),
        ("**/drafts/**", "guide/drafts/a.md", True),
        ("**/drafts/**", "drafts/a.md", True),  # ** matches zero segments
        ("*.md", "a.md", True),
        ("*.md", "guide/a.md", False),  # * never crosses "/"
        ("guide/*.md", "guide/a.md", True),
        ("guide/*.md", "guide/sub/a.md", False),
        ("**/*.md", "guide/sub/a.md", True),
        ("guide/**/a.md", "guide/a.md", True),
        ("guide/**/a.md", "guide/x/y/a.md", True),
        ("guide/**/a.md", "guide/x/y/b.md", False),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_default_exclude_covers_special_folders_and_hidden_at_any_depth() -> None:
    for path in [
        ".vitepress/config.md",
        "docs/.vitepress/theme/x.md",
        "dist/y.md",
        "a/b/dist/y.md",
        "node_modules/pkg/readme.md",
        "site/node_modules/pkg/readme.md",
        ".git/z.md",
        "a/.cache/z.md",
        ".hidden.md",
        "guide/.draft.md",
    ]:
        assert is_excluded(path, DEFAULT_EXCLUDE), path
    for path in ["index.md", "guide/intro.md", "distribution/x.md", "a/modules/x.md", "v1.2/x.md"]:
        assert not is_excluded(path, DEFAULT_EXCLUDE), path


def test_exclude_pattern_without_slash_matches_a_segment_at_any_depth() -> None:
    assert is_excluded("CHANGELOG.md", ["CHANGELOG.md"])
    assert is_excluded("pkg/CHANGELOG.md", ["CHANGELOG.md"])
    assert is_excluded("a/drafts/b.md", ["drafts"])
    assert not is_excluded("a/drafts.md", ["drafts"])


def test_include_matches_the_file_name_ignoring_case() -> None:
    assert is_included("guide/intro.md", ["*.md"])
    assert is_included("NOTES.MD", ["*.md"])
    assert is_included("a/b.markdown", ["*.md", "*.markdown"])
    assert not is_included("a/b.mdx", ["*.md", "*.markdown"])
    assert not is_included("md/readme.txt", ["*.md"])


# --------------------------------------------------------------------------- open_source


def test_open_source_picks_the_source_type(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "looks.zip").mkdir()  # a folder named *.zip is still a folder
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        zf.writestr("a.md", "# A\n")

    assert isinstance(open_source(str(tmp_path / "folder")), FolderSource)
    assert isinstance(open_source(str(tmp_path / "looks.zip")), FolderSource)
    assert isinstance(open_source(str(tmp_path / "a.zip")), ZipSource)
    s3 = open_source("s3://bucket/some/prefix")  # no network needed to build it
    assert isinstance(s3, S3Source)
    assert s3.location == "s3://bucket/some/prefix"


@pytest.mark.parametrize("name", ["missing", "missing.zip", "notes.txt"])
def test_open_source_rejects_anything_else(tmp_path: Path, name: str) -> None:
    write(tmp_path, "notes.txt", "plain file, not a folder or zip")
    location = str(tmp_path / name)
    with pytest.raises(SourceError) as info:
        open_source(location)
    msg = str(info.value)
    if name == "notes.txt":  # a file that is there, but not one read alone (an OpenAPI document is)
        assert msg.startswith(f"{location} is a file pgcite does not read alone: give its folder")
    else:
        assert msg.startswith(f"no such folder, .zip file or s3:// location: {location}")
    assert "\n" not in msg


def test_s3_location_without_bucket_is_a_source_error() -> None:
    with pytest.raises(SourceError, match="no bucket in s3://"):
        open_source("s3://")


# --------------------------------------------------------------------------- folder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(root, "index.md", "# Home\n")
    write(root, "guide.md", "# Guide overview\n")
    write(root, "guide/intro.md", "# Intro\n")
    write(root, "guide/setup.markdown", "# Setup\n")
    write(root, "guide/deep/nested/page.md", "# Deep\n")
    write(root, "NOTES.MD", "# Upper-case extension\n")
    write(root, "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(root, "notes.txt", "not markdown")
    write(root, "drafts/wip.md", "# Work in progress\n")
    write(root, ".vitepress/config.md", "# config\n")
    write(root, "node_modules/x.md", "# x\n")
    write(root, "dist/y.md", "# y\n")
    write(root, ".git/z.md", "# z\n")
    write(root, "guide/.hidden.md", "# hidden\n")
    write(root, "guide/node_modules/pkg/readme.md", "# pkg\n")
    return root


def test_folder_reads_markdown_sorted_and_excludes_defaults(docs: Path) -> None:
    records = list(open_source(str(docs)).scan())
    assert all(isinstance(r, Document) for r in records)
    assert [r.path for r in records] == [
        "NOTES.MD",
        "drafts/wip.md",
        "guide.md",  # "guide.md" sorts before "guide/..." by plain string order
        "guide/deep/nested/page.md",
        "guide/intro.md",
        "guide/setup.markdown",
        "index.md",
    ]
    intro = by_path(records)["guide/intro.md"]
    assert isinstance(intro, Document)
    assert intro.text == "# Intro\n"
    assert intro.checksum == sha((docs / "guide/intro.md").read_bytes())


def test_folder_scan_is_deterministic(docs: Path) -> None:
    src = open_source(str(docs))
    assert list(src.scan()) == list(src.scan())


def test_folder_custom_exclude_replaces_defaults(docs: Path) -> None:
    paths = [r.path for r in open_source(str(docs), exclude=[*DEFAULT_EXCLUDE, "drafts/**"]).scan()]
    assert "drafts/wip.md" not in paths
    assert "index.md" in paths and ".git/z.md" not in paths

    # Without the defaults, the hidden and build folders come back.
    paths = [r.path for r in open_source(str(docs), exclude=["drafts/**"]).scan()]
    assert "drafts/wip.md" not in paths
    assert {".git/z.md", "dist/y.md", "node_modules/x.md", ".vitepress/config.md"} <= set(paths)


def test_folder_custom_include(docs: Path) -> None:
    paths = [r.path for r in open_source(str(docs), include=["*.txt"]).scan()]
    assert paths == ["notes.txt"]


def test_folder_bad_inputs_are_skipped_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "binary.md", b"# looks like md\x00\x01\x02 but has NUL bytes")
    latin1 = "# Café crème\n".encode("latin-1")
    write(root, "latin1.md", latin1)
    write(root, "empty.md", b"")
    write(root, "blank.md", b"  \n\t\n")
    write(root, "bom-only.md", b"\xef\xbb\xbf\n")
    write(root, "utf16.md", "# hi\n".encode("utf-16"))
    bom_raw = b"\xef\xbb\xbf# Titre \xc3\xa9t\xc3\xa9\n"
    write(root, "bom.md", bom_raw)
    write(root, "good.md", "# Good\n")

    got = by_path(list(FolderSource(str(root)).scan()))

    assert got["binary.md"] == Skipped("binary.md", "binary file, not Markdown text")
    offset = latin1.index(b"\xe9")
    assert got["latin1.md"] == Skipped(
        "latin1.md", f"not UTF-8 text (invalid byte at offset {offset}): save it as UTF-8"
    )
    assert got["empty.md"] == Skipped("empty.md", "empty file")
    assert got["blank.md"] == Skipped("blank.md", "empty file")
    assert got["bom-only.md"] == Skipped("bom-only.md", "empty file")
    assert got["utf16.md"] == Skipped("utf16.md", "UTF-16 text, not UTF-8: save it as UTF-8")
    # The BOM is stripped from the text but still part of the checksum (raw bytes).
    assert got["bom.md"] == Document("bom.md", "# Titre été\n", sha(bom_raw))
    assert isinstance(got["good.md"], Document)


def test_invalid_utf8_offset_counts_the_bom(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", b"\xef\xbb\xbfab\xff")
    (rec,) = FolderSource(str(root)).scan()
    assert isinstance(rec, Skipped)
    assert "invalid byte at offset 5" in rec.reason


def test_folder_file_over_limit_is_skipped_without_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    write(root, "big.md", "x" * 500)
    write(root, "small.md", "# ok\n")
    opened: list[str] = []
    real_open = open

    def spy_open(file: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        opened.append(os.path.basename(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(folder, "open", spy_open, raising=False)
    got = by_path(list(FolderSource(str(root), limits=Limits(max_file_bytes=100)).scan()))
    assert got["big.md"] == Skipped(
        "big.md", "file is 500 bytes, over the 100 bytes limit: split it or raise PGCITE_MAX_FILE_BYTES"
    )
    assert isinstance(got["small.md"], Document)
    assert opened == ["small.md"]  # the size was checked before reading


def test_file_size_message_uses_megabytes(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "big.md", "x" * 6_000_000)
    (rec,) = FolderSource(str(root)).scan()
    assert rec == Skipped(
        "big.md", "file is 6 MB, over the 5 MB limit: split it or raise PGCITE_MAX_FILE_BYTES"
    )


def test_folder_unreadable_file_is_skipped_and_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", "# a\n")
    write(root, "locked.md", "# locked\n")
    write(root, "z.md", "# z\n")
    real_open = open

    def deny(file: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if file.endswith("locked.md"):
            raise PermissionError(13, "Permission denied", file)
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(folder, "open", deny, raising=False)
    records = list(FolderSource(str(root)).scan())
    assert [r.path for r in records] == ["a.md", "locked.md", "z.md"]
    assert records[1] == Skipped(
        "locked.md", "cannot read file (Permission denied): check that it is readable"
    )
    assert isinstance(records[0], Document) and isinstance(records[2], Document)


def test_folder_fifo_is_skipped_not_read(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    os.mkfifo(root / "pipe.md")  # reading it would block forever
    (rec,) = FolderSource(str(root)).scan()
    assert rec == Skipped("pipe.md", "not a regular file: replace it with a normal file")


def test_folder_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# outside the root\n")
    write(outside, "more/page.md", "# also outside\n")
    write(root, "real/page.md", "# Real page\n")
    (root / "inside-link.md").symlink_to(root / "real/page.md")
    (root / "outside-link.md").symlink_to(outside / "secret.md")
    (root / "outside-dir").symlink_to(outside / "more", target_is_directory=True)
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    (root / "real/loop").symlink_to(root, target_is_directory=True)  # loop back to the root
    (root / "broken.md").symlink_to(root / "nowhere.md")

    got = by_path(list(FolderSource(str(root)).scan()))

    assert sorted(got) == [
        "alias/loop",
        "alias/page.md",
        "broken.md",
        "inside-link.md",
        "outside-dir",
        "outside-link.md",
        "real/loop",
        "real/page.md",
    ]
    # Inside the root: followed and read like any file.
    inside = got["inside-link.md"]
    assert isinstance(inside, Document) and inside.text == "# Real page\n"
    assert isinstance(got["alias/page.md"], Document)
    # Outside the root: never read.
    for path in ["outside-link.md", "outside-dir"]:
        rec = got[path]
        assert isinstance(rec, Skipped)
        assert rec.reason.startswith("symlink leads outside the source folder: ")
    assert got["real/loop"] == Skipped(
        "real/loop", "symlink loop: it points back to a parent folder"
    )
    broken = got["broken.md"]
    assert isinstance(broken, Skipped) and broken.reason.startswith("broken symlink to ")


def test_folder_root_that_is_a_symlink_is_followed(tmp_path: Path) -> None:
    write(tmp_path / "real", "a.md", "# a\n")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert [r.path for r in open_source(str(tmp_path / "link")).scan()] == ["a.md"]


def test_folder_source_missing_folder_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such folder"):
        FolderSource(str(tmp_path / "nope"))


# --------------------------------------------------------------------------- zip


def make_zip(path: Path, members: dict[str, bytes | str], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)  # ZipInfo keeps names like "/abs.md" untouched
            info.compress_type = compression
            zf.writestr(info, data)
    return path


def test_zip_read_in_place_with_unsafe_members_skipped(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    zpath = make_zip(
        work / "docs.zip",
        {
            "repo-main/": b"",  # directory entry: ignored
            "repo-main/docs/": b"",
            "repo-main/docs/index.md": "# Home\n",
            "repo-main/docs/guide/intro.md": "# Intro\n",
            "repo-main/docs/win\\style.md": "# Backslash path\n",
            "repo-main/docs/logo.png": b"\x89PNG\x00",
            "repo-main/docs/.vitepress/config.md": "# config\n",
            "repo-main/node_modules/x.md": "# x\n",
            "repo-main/docs/binary.md": b"\x00\x01\x02",
            "../evil.md": "# escape\n",
            "/abs.md": "# absolute\n",
            "C:\\windows.md": "# drive\n",
            "repo-main\\..\\..\\sneaky.md": "# backslash escape\n",
        },
    )
    before = tree(tmp_path)

    records = list(open_source(str(zpath)).scan())

    assert tree(tmp_path) == before  # nothing was extracted
    assert [r.path for r in records] == [
        "../evil.md",
        "/abs.md",
        "C:\\windows.md",
        "repo-main/docs/binary.md",
        "repo-main/docs/guide/intro.md",
        "repo-main/docs/index.md",  # the single top folder is kept, not stripped
        "repo-main/docs/win/style.md",
        "repo-main\\..\\..\\sneaky.md",
    ]
    got = by_path(records)
    for name in ["../evil.md", "/abs.md", "C:\\windows.md", "repo-main\\..\\..\\sneaky.md"]:
        assert got[name] == Skipped(name, f"unsafe path in zip (absolute or '..'): {name}")
    assert got["repo-main/docs/binary.md"] == Skipped(
        "repo-main/docs/binary.md", "binary file, not Markdown text"
    )
    assert got["repo-main/docs/index.md"] == Document(
        "repo-main/docs/index.md", "# Home\n", sha(b"# Home\n")
    )
    style = got["repo-main/docs/win/style.md"]
    assert isinstance(style, Document) and style.text == "# Backslash path\n"


def test_zip_bomb_member_is_skipped_by_ratio(tmp_path: Path) -> None:
    zeros = b"0" * 20_000_000  # compresses about 1000x
    zpath = make_zip(tmp_path / "bomb.zip", {"bomb.md": zeros, "ok.md": "# fine\n"})
    with zipfile.ZipFile(zpath) as zf:
        info = zf.getinfo("bomb.md")
        assert info.file_size / info.compress_size > 500  # the fixture really is a bomb

    limits = Limits(max_file_bytes=50_000_000, max_ratio=200)
    got = by_path(list(open_source(str(zpath), limits=limits).scan()))
    bomb = got["bomb.md"]
    assert isinstance(bomb, Skipped)
    assert "over the 200x limit (possible zip bomb)" in bomb.reason
    assert isinstance(got["ok.md"], Document)


def test_zip_member_over_file_limit_is_skipped(tmp_path: Path) -> None:
    zpath = make_zip(tmp_path / "a.zip", {"big.md": "x" * 500, "small.md": "# ok\n"})
    got = by_path(list(open_source(str(zpath), limits=Limits(max_file_bytes=100)).scan()))
    assert got["big.md"] == Skipped(
        "big.md", "file is 500 bytes, over the 100 bytes limit: split it or raise PGCITE_MAX_FILE_BYTES"
    )
    assert isinstance(got["small.md"], Document)


def test_zip_total_uncompressed_size_over_limit_is_a_source_error(tmp_path: Path) -> None:
    zpath = make_zip(tmp_path / "a.zip", {"a.md": "a" * 600, "b.md": "b" * 600})
    src = open_source(str(zpath), limits=Limits(max_total_bytes=1000))
    with pytest.raises(SourceError) as info:
        next(iter(src.scan()))  # raised before the first record
    msg = str(info.value)
    assert "would expand to 1.2 KB, over the 1 KB limit (possible zip bomb)" in msg
    assert "\n" not in msg


def test_zip_total_counts_only_members_that_would_be_read(tmp_path: Path) -> None:
    zpath = make_zip(
        tmp_path / "a.zip",
        {"a.md": "# a\n", "node_modules/huge.md": "x" * 5000, "image.png": b"y" * 5000},
    )
    records = list(open_source(str(zpath), limits=Limits(max_total_bytes=1000)).scan())
    assert [r.path for r in records] == ["a.md"]


def test_zip_duplicate_names_keep_the_last_entry(tmp_path: Path) -> None:
    zpath = tmp_path / "dup.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("a.md", "# first\n")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("a.md", "# second\n")
    records = list(open_source(str(zpath)).scan())
    assert records == [Document("a.md", "# second\n", sha(b"# second\n"))]


def test_zip_member_with_bad_crc_is_skipped(tmp_path: Path) -> None:
    zpath = make_zip(
        tmp_path / "a.zip",
        {"bad.md": "hello world\n", "good.md": "# good\n"},
        compression=zipfile.ZIP_STORED,
    )
    data = zpath.read_bytes()
    assert data.count(b"hello world") == 1
    zpath.write_bytes(data.replace(b"hello world", b"jello world"))

    got = by_path(list(open_source(str(zpath)).scan()))
    bad = got["bad.md"]
    assert isinstance(bad, Skipped) and bad.reason.startswith("cannot read it from the zip (")
    assert "CRC" in bad.reason
    assert isinstance(got["good.md"], Document)


@pytest.mark.parametrize("content", [b"this is not a zip archive", b""])
def test_corrupt_zip_is_a_source_error(tmp_path: Path, content: bytes) -> None:
    zpath = tmp_path / "broken.zip"
    zpath.write_bytes(content)
    with pytest.raises(SourceError) as info:
        open_source(str(zpath))
    msg = str(info.value)
    assert msg.startswith(f"not a readable zip archive: {zpath} (")
    assert "\n" not in msg


def test_truncated_zip_is_a_source_error(tmp_path: Path) -> None:
    zpath = make_zip(tmp_path / "a.zip", {f"p{i}.md": f"# page {i}\n" * 50 for i in range(20)})
    data = zpath.read_bytes()
    zpath.write_bytes(data[: len(data) // 2])
    with pytest.raises(SourceError, match="not a readable zip archive"):
        open_source(str(zpath))


def test_missing_zip_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"no such folder, \.zip file or s3:// location"):
        open_source(str(tmp_path / "missing.zip"))
    with pytest.raises(SourceError, match="not a readable zip archive"):
        ZipSource(str(tmp_path / "missing.zip"))


# --------------------------------------------------------------------------- S3

BUCKET = "pgcite-docs"


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, moto_endpoint: str) -> str:
    return fake_aws(monkeypatch, tmp_path, moto_endpoint)


def fake_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, moto_endpoint: str) -> str:
    """Fake credentials pointing at the moto server; nothing from the host's AWS setup."""
    for var in [
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL_S3",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    return moto_endpoint


S3_OBJECTS: dict[str, bytes] = {
    "docs/index.md": b"# Home\n",
    "docs/guide/intro.md": b"# Intro\n",
    "docs/guide/deep/page.markdown": b"# Deep\n",
    "docs/guide/": b"",  # a "folder" placeholder object
    "docs/.vitepress/config.md": b"# config\n",
    "docs/node_modules/x.md": b"# x\n",
    "docs/logo.png": b"\x89PNG\x00",
    "docs/binary.md": b"#\x00\x01\x02",
    "docs/latin1.md": "# Café\n".encode("latin-1"),
    "docs/big.md": b"x" * 500,
    "docs-old/stale.md": b"# must not match the docs/ prefix\n",
    "other/readme.md": b"# elsewhere\n",
}


@pytest.fixture
def bucket(aws_env: str) -> str:
    import boto3

    s3 = boto3.client("s3", endpoint_url=aws_env)
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if BUCKET not in existing:
        s3.create_bucket(Bucket=BUCKET)
        for key, body in S3_OBJECTS.items():
            s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    return BUCKET


@pytest.mark.parametrize("location", [f"s3://{BUCKET}/docs", f"s3://{BUCKET}/docs/"])
def test_s3_scan_lists_filters_and_reads(bucket: str, location: str) -> None:
    src = open_source(location, limits=Limits(max_file_bytes=100))
    assert isinstance(src, S3Source)
    records = list(src.scan())
    assert [r.path for r in records] == [
        "big.md",
        "binary.md",
        "guide/deep/page.markdown",
        "guide/intro.md",
        "index.md",
        "latin1.md",
    ]
    got = by_path(records)
    assert got["index.md"] == Document("index.md", "# Home\n", sha(b"# Home\n"))
    assert got["guide/intro.md"] == Document("guide/intro.md", "# Intro\n", sha(b"# Intro\n"))
    assert got["binary.md"] == Skipped("binary.md", "binary file, not Markdown text")
    assert got["big.md"] == Skipped(
        "big.md", "file is 500 bytes, over the 100 bytes limit: split it or raise PGCITE_MAX_FILE_BYTES"
    )
    latin1 = got["latin1.md"]
    assert isinstance(latin1, Skipped) and "invalid byte at offset 5" in latin1.reason


def test_s3_whole_bucket_without_prefix(bucket: str) -> None:
    paths = [r.path for r in open_source(f"s3://{bucket}").scan()]
    assert "docs-old/stale.md" in paths
    assert "other/readme.md" in paths
    assert "docs/index.md" in paths
    assert "docs/.vitepress/config.md" not in paths
    assert paths == sorted(paths)


def test_s3_explicit_endpoint_url(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    src = S3Source(f"s3://{bucket}/other", endpoint_url=endpoint)
    assert src.endpoint == endpoint
    assert list(src.scan()) == [
        Document("readme.md", "# elsewhere\n", sha(b"# elsewhere\n"))
    ]


def test_s3_missing_bucket_is_a_source_error(aws_env: str) -> None:
    with pytest.raises(SourceError) as info:
        list(open_source("s3://no-such-bucket-here/docs").scan())
    msg = str(info.value)
    assert msg.startswith(f"S3 bucket 'no-such-bucket-here' does not exist at {aws_env}")
    assert "\n" not in msg


def test_s3_unreachable_endpoint_fails_fast(aws_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and is now closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    closed = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", closed)

    start = time.monotonic()
    with pytest.raises(SourceError) as info:
        list(open_source(f"s3://{BUCKET}/docs").scan())
    assert time.monotonic() - start < 15
    assert str(info.value) == (
        f"cannot reach the S3 endpoint {closed}: check AWS_ENDPOINT_URL and your network"
    )


def test_s3_without_credentials_is_a_source_error(
    aws_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(SourceError) as info:
        list(open_source(f"s3://{BUCKET}/docs").scan())
    assert str(info.value) == (
        f"no AWS credentials found for s3://{BUCKET}/docs/: "
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
    )
