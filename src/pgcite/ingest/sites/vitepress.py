"""VitePress: a folder holding `.vitepress/`. Pages are routed `a/b.md` -> `a/b.html` and
`a/index.md` -> `a/` (the defaults: `cleanUrls` off, `srcDir` the folder itself; the config is
code, so `--base-url` says where the site is). `<<< @/file#region{lang}` code imports and
`<!--@include: ./part.md-->` Markdown includes are read into the page.

Languages: each key of the config's `locales` but `root` is the folder holding that language,
its `lang` the language (else the key, if a language); `root` is the default, in the site's own
`lang` (VitePress's default: en-US). Without `locales` the site names no language."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from pgcite.ingest import markup
from pgcite.ingest.anchors import VITEPRESS
from pgcite.ingest.markdown import Dialect
from pgcite.ingest.sites.base import Files, Includes, Site, code_fence, fence_language, indent_lines, select_lines
from pgcite.ingest.sites.jsconfig import JsConfig
from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sites.locales import LocaleFolders
from pgcite.ingest.sites.sitefiles import read_hidden

__all__ = ["VitePress"]

_CODE_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)<<<[ \t]+(?P<path>[^\s#{\[]+)(?:#(?P<region>[\w-]+))?(?:\{(?P<options>[^}]*)\})?"
    r"(?:[ \t]*\[(?P<title>[^\]]*)\])?[ \t]*$"
)
_MARKDOWN_INCLUDE = re.compile(
    r"<!--\s*@include:\s*(?P<path>[^\s{#]+?)(?:#(?P<region>[\w-]+))?(?:\{(?P<lines>[\d,:-]*)\})?\s*-->"
)
_REGION_MARK = re.compile(r"^[^\n]*#(?:end)?region\b[^\n]*\n?", re.MULTILINE)

_CONFIGS = tuple(
    f".vitepress/{name}.{ext}"
    for name in ("config", "config/index")
    for ext in ("ts", "mts", "js", "mjs", "cts", "cjs")
)
ROOT = "root"  # the locale served without a folder of its own
DEFAULT_LANGUAGE = "en-US"  # the site's `lang` when it sets none


def region(text: str, name: str) -> str | None:
    """The lines between `#region name` and `#endregion` (any comment syntax), markers left out."""
    match = re.search(
        rf"^[^\n]*#region[ \t]+{re.escape(name)}\b[^\n]*\n(?P<body>.*?)^[^\n]*#endregion\b",
        text,
        re.DOTALL | re.MULTILINE,
    )
    return match["body"].rstrip("\n") if match else None


class VitePress(Site):
    name = "vitepress"
    dialect = Dialect(anchors=VITEPRESS)
    markers = (".vitepress",)

    def __init__(self, files: Files) -> None:
        super().__init__(files)
        self.locales = LocaleFolders("")
        config = JsConfig.first(lambda path: read_hidden(files, path), _CONFIGS)
        literal = config.object("locales") if config else None
        if config is None or literal is None:
            return
        site_lang = config.string(config.top_level("lang")) or DEFAULT_LANGUAGE
        locales: dict[str, str] = {}
        for key, value in config.entries(literal).items():
            lang = config.string(config.entries(value).get("lang")) if value.startswith("{") else None
            fallback = site_lang if key == ROOT else key
            locales[key] = language_tag(lang) or language_tag(fallback) or fallback.lower()
        default = locales.pop(ROOT, language_tag(site_lang) or site_lang.lower())
        self.locales = LocaleFolders(default, {key.lower(): tag for key, tag in locales.items() if files.exists(key)})
        self.languages, self.default_language = self.locales.narrowed(files.prefix)

    def language_of(self, site_path: str) -> str:
        return self.locales.language_of(site_path)

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        folder, name = posixpath.split(site_path)
        stem = posixpath.splitext(name)[0]
        prefix = f"{folder}/" if folder else ""
        return prefix if stem == "index" else f"{prefix}{stem}.html"

    def _target(self, path: str, includes: Includes) -> str:
        # `@/` is the source root (srcDir, the site folder by default); anything else is relative.
        return includes.resolve(path[2:], relative_to="") if path.startswith("@/") else includes.resolve(path)

    def prepare(self, body: str, includes: Includes, depth: int = 0) -> str:
        out: list[str] = []
        for run, fence in markup.split_fenced(body):
            if fence is not None:
                out.append("\n".join(run))
                continue
            text = _MARKDOWN_INCLUDE.sub(lambda m: self._markdown(m, includes, depth), "\n".join(run))
            out.append("\n".join(self._code(line, includes, depth) for line in text.split("\n")))
        return "\n".join(out)

    def _code(self, line: str, includes: Includes, depth: int) -> str:
        match = _CODE_IMPORT.match(line)
        if not match:
            return line
        path = self._target(match["path"], includes)
        code = includes.read(path, depth, match["path"])
        if code is None:
            return ""
        if match["region"]:
            code = region(code, match["region"]) or ""
        code = _REGION_MARK.sub("", code)
        options = (match["options"] or "").split()
        language = next((o for o in options if not re.fullmatch(r"[\d,\s-]+", o)), "") or fence_language(path)
        fenced = code_fence(code, language, match["title"] or "")
        return indent_lines(fenced, match["indent"])

    def _markdown(self, match: re.Match[str], includes: Includes, depth: int) -> str:
        path = self._target(match["path"], includes)
        text = includes.read(path, depth, match["path"])
        if text is None:
            return ""
        if match["region"]:
            text = region(text, match["region"]) or ""
        if match["lines"]:
            text = select_lines(text, match["lines"].replace("-", ":"))
        return self.prepare(text, includes.at(path), depth + 1)
