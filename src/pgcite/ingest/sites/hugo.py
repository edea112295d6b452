"""Hugo: `hugo.toml` (or `.yaml`/`.json`; `config.*` beside a `content/` folder) gives `contentDir`,
`baseURL` and `uglyURLs`. Pages are routed `a/b.md` -> `a/b/`, `a/_index.md` and leaf bundles
`a/b/index.md` -> their folder, paths lower-cased; `url` and `slug` front matter win. Shortcodes
are dropped and their inner text kept; `highlight` becomes a code block, `ref`/`relref` the path."""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Mapping
from typing import Any

import yaml

from pgcite.ingest import markup
from pgcite.ingest.sites.base import Files, Includes, Site, code_fence

__all__ = ["Hugo"]

_CONFIGS = (
    "hugo.toml",
    "hugo.yaml",
    "hugo.yml",
    "hugo.json",
    "config.toml",
    "config.yaml",
    "config.yml",
    "config.json",
)
_HIGHLIGHT = re.compile(
    r"\{\{[<%]\s*highlight\s+(?P<lang>[\w+-]+)[^}]*[>%]\}\}\n?(?P<code>.*?)\{\{[<%]\s*/\s*highlight\s*[>%]\}\}",
    re.DOTALL,
)
_REF = re.compile(r"\{\{[<%]\s*(?:rel)?ref\s+\"?(?P<path>[^\"\s>%]+)\"?\s*[>%]\}\}")
_SHORTCODE = re.compile(r"\{\{[<%]\s*/?\s*[\w/-]+(?:[^}]|\}(?!\}))*?/?\s*[>%]\}\}")
_ESCAPED = re.compile(r"\{\{([<%])/\*(.*?)\*/([>%])\}\}", re.DOTALL)


def _load(name: str, text: str) -> dict[str, Any]:
    try:
        if name.endswith(".toml"):
            data: object = tomllib.loads(text)
        elif name.endswith(".json"):
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, ValueError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


class Hugo(Site):
    name = "hugo"
    markers = _CONFIGS[:4]

    @classmethod
    def detect(cls, files: Files) -> bool:
        return super().detect(files) or (any(files.exists(c) for c in _CONFIGS[4:]) and files.exists("content"))

    def __init__(self, files: Files) -> None:
        super().__init__(files)
        config: dict[str, Any] = {}
        for name in _CONFIGS:
            try:
                config = _load(name, files.read(name))
                break
            except OSError:
                continue
        lowered = {str(k).lower(): v for k, v in config.items()}
        self.content_dirs = (str(lowered.get("contentdir") or "content").strip("/"),)
        self.base_url = str(lowered.get("baseurl") or "")
        self.ugly_urls = lowered.get("uglyurls") is True

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        if isinstance(front_matter.get("url"), str) and front_matter["url"].strip():
            return front_matter["url"].strip().lstrip("/")
        folder, name = posixpath.split(posixpath.relpath(site_path, self.content_dirs[0]))
        stem = posixpath.splitext(name)[0]
        if folder == ".":
            folder = ""
        if stem in ("_index", "index"):
            parts = [p for p in folder.split("/") if p]
        else:
            slug = front_matter.get("slug")
            parts = [*(p for p in folder.split("/") if p), str(slug) if slug else stem]
        if not parts:
            return ""
        route = "/".join(p.lower().replace(" ", "-") for p in parts)
        return f"{route}.html" if self.ugly_urls and stem not in ("_index", "index") else f"{route}/"

    def prepare(self, body: str, includes: Includes) -> str:
        out = []
        for run, fence in markup.split_fenced(body):
            text = "\n".join(run)
            if fence is None:
                text, restore = markup.protect_code_spans(text)
                text = _HIGHLIGHT.sub(lambda m: code_fence(m["code"], m["lang"]), text)
                text = _REF.sub(lambda m: m["path"], text)
                text = restore(_SHORTCODE.sub("", text))
            out.append(_ESCAPED.sub(r"{{\1\2\3}}", text))
        return "\n".join(out)
