"""MkDocs (and MkDocs Material, Zensical): mkdocs.yml's `docs_dir`, `use_directory_urls` and
`site_url`; admonitions (`!!!`, `???`, `///` blocks), content tabs (`===`, `/// tab`),
mkdocstrings directives, attribute lists, abbreviations, macros and icons; includes by
snippets (`--8<--`), mdx_include (`{! file !}`) and FastAPI's `{* file ln[..] *}`. Languages:
mkdocs_i18n."""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from pgcite.ingest import bounded_yaml, markup
from pgcite.ingest.anchors import PYTHON_MARKDOWN
from pgcite.ingest.markdown import Dialect
from pgcite.ingest.sites.base import Includes, Site, code_fence, fence_language, indent_lines, select_lines
from pgcite.ingest.sites.locales import within
from pgcite.ingest.sites.mkdocs_i18n import read_languages

__all__ = ["MkDocs"]


class _ConfigLoader(yaml.SafeLoader):
    """mkdocs.yml is YAML with Python tags (`!!python/name:...`, `!ENV`): read them as nothing."""


_ConfigLoader.add_multi_constructor("", lambda loader, suffix, node: None)

# --- includes (resolved before anything else, inside code fences too, as MkDocs does) --------

_VARIANT_INCLUDE = re.compile(
    r"^(?P<indent>[ \t]*)\{\*[ \t]*(?P<path>\S+)(?P<options>[^\n]*?)\*\}[ \t]*$", re.MULTILINE
)
_OPTION = re.compile(r"(?P<name>\w+)\[(?P<value>[^\]]*)\]")
_MDX_INCLUDE = re.compile(r"\{!>?[ \t]*(?P<path>[^!\s][^!\n]*?)[ \t]*!\}")
_SNIPPET_LINE = re.compile(
    r"^(?P<indent>[ \t]*)--8<--[ \t]+(?P<quote>[\"'])(?P<spec>[^\"'\n]+)(?P=quote)[ \t]*$", re.MULTILINE
)
_SNIPPET_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)--8<--[ \t]*\n(?P<specs>(?:[ \t]*[^\n]+\n)+?)[ \t]*--8<--[ \t]*$", re.MULTILINE
)
_SNIPPET_SECTION = re.compile(r"^[^\n]*--8<--[ \t]*\[(?:start|end):[\w-]+\][^\n]*\n?", re.MULTILINE)

# --- blocks ---------------------------------------------------------------------------------

# `!!! note "Title"`, `??? tip`, `???+ warning "Open by default"`, and content tabs `=== "Tab"`.
_INDENTED_BLOCK = re.compile(
    r'^(?P<indent>[ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+)(?:[ \t]+[\w-]+)*(?:[ \t]+"(?P<title>[^"]*)")?'
    r'|===\+?[ \t]+"(?P<tab>[^"]*)")[ \t]*$'
)
# pymdownx.blocks: `/// note | Title` ... `///`, nested with more slashes; `/// tab | Python 3.10+`.
_SLASH_OPEN = re.compile(r"^(?P<indent>[ \t]*)/{3,}[ \t]*(?P<kind>[\w-]+)(?:[ \t]*\|[ \t]*(?P<title>.*?))?[ \t]*$")
_SLASH_CLOSE = re.compile(r"^[ \t]*/{3,}[ \t]*$")
_BLOCK_OPTION = re.compile(r"^[ \t]+[\w-]+:")
_API_DIRECTIVE = re.compile(r"^:::[ \t]+(?P<name>[\w.]+)[ \t]*$")  # mkdocstrings
_TERMY_OPEN = re.compile(r"<div\b[^>]*\bclass=[\"'][^\"']*\btermy\b", re.IGNORECASE)
_GENERIC = {
    "note",
    "tip",
    "info",
    "warning",
    "danger",
    "caution",
    "attention",
    "error",
    "hint",
    "check",
    "important",
    "abstract",
    "summary",
    "tldr",
    "todo",
    "success",
    "question",
    "help",
    "faq",
    "failure",
    "fail",
    "missing",
    "bug",
    "example",
    "quote",
    "cite",
    "admonition",
    "details",
    "html",
    "define",
    "caption",
}

# --- inline markup ----------------------------------------------------------------------------

_ATTRIBUTE = r"(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+)|data-[\w-]+)"
_ATTRIBUTE_LIST = re.compile(rf"[ \t]*\{{:?[ \t]*{_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*[ \t]*\}}")
_ABBREVIATION = re.compile(r"^\*\[[^\]]+\]:.*$", re.MULTILINE)
_MACRO = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_ICON = re.compile(r":(?:material|fontawesome|octicons|simple)-[\w-]+:")
_KEYS = re.compile(r"\+\+([\w+-]+?)\+\+")
_MARK = re.compile(r"==(?=\S)(.+?)(?<=\S)==")
_TAG = re.compile(r"<[^>\n]+>")


def _title_line(indent: str, title: str | None, kind: str | None) -> str:
    """What a block's title leaves: a bold line, unless it only repeats the block's type."""
    title = (title or "").strip()
    if not title or title.lower() in _GENERIC | {(kind or "").lower()}:
        return ""
    return f"{indent}**{title}**"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _blocks(lines: list[str]) -> list[str]:
    """Block syntax as plain Markdown: titles as bold lines, fences dropped, indented bodies
    dedented; code fences copied as they are."""
    out: list[str] = []
    i = 0
    termy = False
    while i < len(lines):
        line = lines[i]
        fence = markup.fence_open(line)
        if fence is not None:
            end = i + 1
            while end < len(lines) and not markup.fence_closes(lines[end], fence):
                end += 1
            block = lines[i : end + 1]
            out += _termy(block) if termy else block
            i = end + 1
            continue
        if _TERMY_OPEN.search(line):
            termy = True
        elif "</div>" in line:
            termy = False
        if match := _INDENTED_BLOCK.match(line):
            margin = _indent(line)
            body: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) >= margin + 4):
                body.append(lines[i])
                i += 1
            while body and not body[-1].strip():  # trailing blanks belong to what follows
                body.pop()
                i -= 1
            title = match["tab"] if match["tab"] is not None else match["title"]
            out.append(_title_line(match["indent"], title, None if match["tab"] is not None else match["kind"]))
            out += _blocks([b[:margin] + b[margin + 4 :] if b.strip() else "" for b in body])
            continue
        if match := _SLASH_OPEN.match(line):
            title = match["title"]
            out.append(
                _title_line(match["indent"], title, None if match["kind"] in ("tab", "details") else match["kind"])
            )
            i += 1
            while i < len(lines) and _BLOCK_OPTION.match(lines[i]):
                i += 1
            continue
        if _SLASH_CLOSE.match(line):
            out.append("")
            i += 1
            continue
        if match := _API_DIRECTIVE.match(line):
            out.append(f"`{match['name']}`")  # the API text itself is generated from code we do not have
            i += 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > 0:
                i += 1
            continue
        out.append(line)
        i += 1
    return out


def _termy(block: list[str]) -> list[str]:
    """A console block inside a termynal `<div class="termy">`: its HTML is styling the page
    renders, so the reader sees the text alone."""
    return (
        [block[0], *(html.unescape(_TAG.sub("", line)) for line in block[1:-1]), block[-1]] if len(block) > 2 else block
    )


def _inline(prose: str) -> str:
    text, restore = markup.protect_code_spans(prose)
    text = _ABBREVIATION.sub("", text)
    text = _MACRO.sub("", text)
    # A heading keeps its attribute list: its #id is the anchor (markdown.py reads it).
    text = "\n".join(
        line if line.lstrip().startswith("#") else _ATTRIBUTE_LIST.sub("", line) for line in text.split("\n")
    )
    text = _ICON.sub("", text)
    text = _KEYS.sub(lambda m: "+".join(k.capitalize() for k in m.group(1).split("+")), text)
    text = _MARK.sub(r"\1", text)
    return restore(text)


def _fence_info(line: str) -> str:
    """```{ .dockerfile .annotate } -> ```dockerfile"""
    fence = markup.fence_open(line)
    if fence is None or not fence.info.startswith("{"):
        return line
    language = re.search(r"\.([\w+-]+)", fence.info)
    return f"{fence.indent}{fence.marker}{language.group(1) if language else ''}"


def _nav_pages(nav: Any) -> Iterator[str]:
    """The pages mkdocs.yml's `nav` lists, depth first: `path.md`, `Title: path.md` and
    `Section: [...]`; links to other sites left out."""
    if isinstance(nav, str) and "://" not in nav:
        yield posixpath.normpath(nav.lstrip("/"))
    elif isinstance(nav, list | dict):
        for item in nav.values() if isinstance(nav, dict) else nav:
            yield from _nav_pages(item)


class MkDocs(Site):
    name = "mkdocs"
    base_url_setting = "mkdocs.yml's site_url"
    dialect = Dialect(anchors=PYTHON_MARKDOWN)
    markers = ("mkdocs.yml", "mkdocs.yaml")

    def __init__(self, files: Any) -> None:
        super().__init__(files)
        self._config_file, config = self._config()
        self.content_dirs = (str(config.get("docs_dir") or "docs").strip("/"),)
        self.directory_urls = config.get("use_directory_urls", True) is not False
        self.base_url = str(config.get("site_url") or "")
        self.i18n = read_languages(config)
        self.languages, self.default_language = self.i18n.narrowed(within(files.prefix, self.content_dirs[0]))
        self._positions = {path: n for n, path in enumerate(dict.fromkeys(_nav_pages(config.get("nav"))))}

    def _config(self) -> tuple[str, Mapping[str, Any]]:
        for name in self.markers:
            try:
                data = bounded_yaml.load(self.files.read(name), _ConfigLoader)
            except bounded_yaml.Refused as err:
                self.problems.append(f"{name} left out, the defaults taken: {err}")
                return name, {}
            except (OSError, yaml.YAMLError):
                continue
            return name, data if isinstance(data, dict) else {}
        return "", {}

    def position_of(self, site_path: str, includes: Includes) -> int | None:
        """Its place in mkdocs.yml's `nav` (a translation takes its original's); None without a nav."""
        if not self._positions:
            return None
        includes.depends_on(self._config_file)
        return self._positions.get(self.i18n.split(posixpath.relpath(site_path, self.content_dirs[0]))[1])

    def language_of(self, site_path: str) -> str:
        return self.i18n.tag(self.i18n.split(posixpath.relpath(site_path, self.content_dirs[0]))[0])

    @property
    def publishing(self) -> str:
        return "" if self.directory_urls else "use_directory_urls: false"

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        locale, path = self.i18n.split(posixpath.relpath(site_path, self.content_dirs[0]))
        return (f"{locale}/" if locale else "") + self._route(path)

    def _route(self, path: str) -> str:
        folder, name = posixpath.split(path)
        stem = posixpath.splitext(name)[0]
        prefix = f"{folder}/" if folder else ""
        if stem.lower() in ("index", "readme"):
            return prefix if self.directory_urls else f"{prefix}index.html"
        return f"{prefix}{stem}/" if self.directory_urls else f"{prefix}{stem}.html"

    # --- markup ------------------------------------------------------------------------------

    def prepare(self, body: str, includes: Includes) -> str:
        body = self._includes(body, includes, 0)
        lines = [_fence_info(line) for line in _blocks(body.split("\n"))]
        pieces = [
            "\n".join(run) if fence else _inline("\n".join(run)) for run, fence in markup.split_fenced("\n".join(lines))
        ]
        return "\n".join(pieces)

    def _read(self, target: str, includes: Includes, depth: int, page_dir: str) -> str | None:
        """An include, looked up from the site root (where MkDocs runs), then from the page."""
        for base in ("", page_dir):
            path = includes.resolve(target, relative_to=base)
            if self.files.exists(path):
                return includes.read(path, depth, target)
        return includes.read(includes.resolve(target, relative_to=""), depth, target)

    def _includes(self, text: str, includes: Includes, depth: int) -> str:
        page_dir = posixpath.dirname(includes.page)

        def nested(content: str) -> str:
            return self._includes(content, includes, depth + 1)

        def variant(match: re.Match[str]) -> str:
            code = self._read(match["path"], includes, depth, page_dir)
            if code is None:
                return ""
            options = {m["name"]: m["value"] for m in _OPTION.finditer(match["options"])}
            code = select_lines(code, options.get("ln", ""))
            title = options.get("title", "").strip("\"'")
            fenced = code_fence(code, fence_language(match["path"]), title)
            return indent_lines(fenced, match["indent"])

        def raw(match: re.Match[str]) -> str:
            content = self._read(match["path"].strip(), includes, depth, page_dir)
            return "" if content is None else nested(content).rstrip("\n")

        def snippet(spec: str, indent: str) -> str:
            spec = spec.strip()
            if spec.startswith(";") or "://" in spec:  # escaped, or a URL (not fetched)
                return ""
            path, _, selector = spec.partition(":")
            content = self._read(path, includes, depth, page_dir)
            if content is None:
                return ""
            if selector and not selector.replace(":", "").replace(",", "").isdigit():
                name = re.escape(selector)
                section = re.search(
                    rf"--8<--[ \t]*\[start:{name}\][^\n]*\n(.*?)^[^\n]*--8<--[ \t]*\[end:{name}\]",
                    content,
                    re.DOTALL | re.MULTILINE,
                )
                content = section.group(1) if section else ""
            elif selector:
                content = select_lines(content, selector)
            content = _SNIPPET_SECTION.sub("", nested(content)).rstrip("\n")
            return indent_lines(content, indent)

        text = _VARIANT_INCLUDE.sub(variant, text)
        text = _MDX_INCLUDE.sub(raw, text)
        text = _SNIPPET_BLOCK.sub(
            lambda m: "\n".join(snippet(s, m["indent"]) for s in m["specs"].split("\n") if s.strip()), text
        )
        return _SNIPPET_LINE.sub(lambda m: snippet(m["spec"], m["indent"]), text)
