"""Where the renderers that publish an API description put each tag and operation, so a citation
opens it. Swagger UI (`deepLinking`, FastAPI's /docs) links `#/{tag}/{operationId}`; Redoc links
`#tag/{Tag-Slug}/operation/{operationId}`, and an operation without an operationId by its JSON
pointer (`#tag/pet/paths/~1pet~1%7BpetId%7D/get`). Both were read from the renderers' own pages
in a browser (tests/test_openapi_renderers.py). A tag of "" is that of an operation without tags,
which Swagger UI shows under "default" and Redoc in no group."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.sites.openapi_schemas import as_text

__all__ = ["UNTAGGED", "operation_anchor", "renderer_of", "tag_anchor"]

UNTAGGED = "default"  # Swagger UI's group for operations without tags
# The vendor extensions only Redoc reads: a description that has them is published with Redoc.
_REDOC_EXTENSIONS = ("x-tagGroups", "x-logo")
# Redoc's slugify: some signs become words, other characters outside these are dropped.
_SIGNS = {"&": "and", "$": "dollar", "%": "percent", "<": "less", ">": "greater", "|": "or"}
_DROPPED = re.compile(r"""[^\w\s$*+~.()'"!\-:@]+""", re.ASCII)


def renderer_of(spec: Mapping[str, Any], chosen: str | None) -> str:
    """The renderer `chosen` (`--site redoc`), else Redoc where the description uses its
    extensions, else Swagger UI."""
    if chosen:
        return chosen
    info: Mapping[str, Any] = spec["info"] if isinstance(spec.get("info"), dict) else {}
    return "redoc" if any(key in spec or key in info for key in _REDOC_EXTENSIONS) else "swagger-ui"


def tag_anchor(renderer: str, tag: str) -> str:
    return f"tag/{_redoc_slug(tag)}" if renderer == "redoc" else "/" + _url(tag)


def operation_anchor(renderer: str, tag: str, path: str, method: str, operation: Mapping[str, Any]) -> str:
    explicit = as_text(operation.get("operationId"))
    if renderer == "redoc":
        group = f"tag/{_redoc_slug(tag)}" if tag else ""
        if explicit:
            return _url(f"{group}/operation/{explicit}" if group else f"operation/{explicit}")
        pointer = path.replace("~", "~0").replace("/", "~1")
        return _url(f"{group}/paths/{pointer}/{method}")
    # Swagger UI: the operationId, else the method and the path, every non-word character `_`.
    return f"/{_url(tag)}/" + (_url(explicit) if explicit else method + re.sub(r"\W", "_", path))


def _redoc_slug(name: str) -> str:
    text = "".join(_SIGNS.get(c, c) for c in name)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()  # é -> e
    slug = "-".join(_DROPPED.sub("", text).split())
    return slug or "-".join(name.lower().split())


def _url(anchor: str) -> str:
    """As a link writes it: a space and the braces an `{#anchor}` cannot hold, %-encoded (both
    renderers decode the fragment)."""
    return anchor.replace(" ", "%20").replace("{", "%7B").replace("}", "%7D")
