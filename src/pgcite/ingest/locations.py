"""From what the user typed (a folder path, a .zip file, an OpenAPI file, s3://bucket/prefix or a
site's https:// address) to the source that reads it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pgcite.errors import SourceError
from pgcite.ingest.crawl import CrawlSettings, WebSource, is_url
from pgcite.ingest.folder import FolderSource
from pgcite.ingest.s3 import S3Source
from pgcite.ingest.sources import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Limits, Source, one_line
from pgcite.ingest.zipped import ZipSource

__all__ = ["is_remote", "open_source"]

API_FILES = (".yaml", ".yml", ".json")  # a file given alone is read as an OpenAPI document


def is_remote(location: str) -> bool:
    """An S3 location or a web address rather than a path on this machine."""
    return location.startswith("s3://") or is_url(location)


def open_source(
    location: str,
    *,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    include: Sequence[str] = DEFAULT_INCLUDE,
    limits: Limits = Limits(),
    include_root: str | None = None,
    crawl: CrawlSettings | None = None,
) -> Source:
    """Pick the source type from what the user typed; `crawl`: how a site's URL is crawled."""
    kw: dict[str, Any] = {"exclude": exclude, "include": include, "limits": limits}
    if is_url(location):
        return WebSource(location, crawl=crawl, **kw)
    if is_remote(location):
        return S3Source(location, **kw)
    if location.lower().endswith(".zip") and os.path.isfile(location):
        return ZipSource(location, **kw)
    if os.path.isdir(location) or (os.path.isfile(location) and location.lower().endswith(API_FILES)):
        return FolderSource(location, include_root=include_root, **kw)
    if os.path.isfile(location):
        raise SourceError(
            one_line(
                f"{location} is a file pgcite does not read alone: give its folder, a .zip file, "
                "or an OpenAPI document (.yaml, .yml or .json)"
            )
        )
    raise SourceError(
        one_line(
            f"no such folder, .zip file or s3:// location: {location}: "
            "give a folder path, a .zip file, an OpenAPI document, s3://bucket/prefix or a site's https:// address"
        )
    )
