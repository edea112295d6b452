"""A folder whose root holds an API description (openapi.yaml, swagger.json) and no other
generator's configuration, or one such file given alone (`pgcite ingest openapi.yaml`): the
description is published where `--base-url` says (its Swagger UI or Redoc page), so its route is
its folder; Markdown beside it reads as a plain folder's. Named, `--site redoc` is the same site
published with Redoc, whose anchors differ from Swagger UI's."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.sites.base import Files
from pgcite.ingest.sites.openapi import SPEC_FILES
from pgcite.ingest.sites.plain import Plain

__all__ = ["ApiReference", "Redoc"]


class ApiReference(Plain):
    name = "openapi"
    markers = tuple(name for name in SPEC_FILES if "*" not in name)

    def __init__(self, files: Files, single: str = "") -> None:
        super().__init__(files)
        self.single = single  # the one file given alone, whatever its name; "" for a folder

    @property
    def include(self) -> tuple[str, ...]:
        return (f"/{self.single}",) if self.single else super().include

    def is_api(self, site_path: str) -> bool:
        return site_path == self.single or super().is_api(site_path)

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        if not self.is_api(site_path):
            return super().route(site_path, front_matter)
        folder = posixpath.dirname(site_path)
        return f"{folder}/" if folder else ""


class Redoc(ApiReference):
    """The same, published with Redoc (`--site redoc`): its anchors, not Swagger UI's."""

    name = "redoc"
    api_renderer = "redoc"
