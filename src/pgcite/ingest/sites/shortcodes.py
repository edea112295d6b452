"""Hugo shortcodes read as Hugo reads them (`{{< name args >}}`, `{{% name %}}`, paired with their
`{{< /name >}}` or self-closing, nested, escaped as `{{</* name */>}}`) and reduced to the text a
reader sees: Hugo's own shortcodes and the common ones of gohugo.io's docs by what they render,
others by their inner text (paired) or nothing (a version argument kept)."""

from __future__ import annotations

import json
import re
import textwrap
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from pgcite.ingest import bounded_yaml
from pgcite.ingest.sites.base import code_fence

__all__ = ["Call", "expand"]

_OPEN = re.compile(r"\{\{([<%])")
_ESCAPED = re.compile(r"\{\{([<%])/\*(.*?)\*/([>%])\}\}", re.DOTALL)
_NAME = re.compile(r"[ \t\n]*(/)?[ \t\n]*([\w][\w./-]*)")
_BARE = re.compile(r"[^\s\"`=]+?(?=\s|=|/?[>%]\}\}|$)")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+[\w.+-]*", re.IGNORECASE)
_ABOUT_VERSIONS = re.compile(r"new|added|since|deprecated|removed|changed|version|release", re.IGNORECASE)
_HIDDEN = {"qr", "youtube", "vimeo", "x", "twitter", "tweet", "instagram", "gist", "img", "imgproc", "datatable"}


@dataclass
class Call:
    """One shortcode call: its arguments, and the text between its tags (nested shortcodes already
    expanded) when it has a closing tag."""

    name: str
    args: list[str] = field(default_factory=list)  # positional
    params: dict[str, str] = field(default_factory=dict)  # named, keys lower-cased
    markdown: bool = False  # {{% %}}: its output is Markdown
    inner: str | None = None

    def get(self, key: str | int, default: str = "") -> str:
        if isinstance(key, int):
            return self.args[key] if key < len(self.args) else default
        return self.params.get(key.lower(), default)

    def flag(self, key: str) -> bool:
        return self.get(key).lower() in ("true", "1")


@dataclass
class _Tag:
    call: Call
    closing: bool
    self_closing: bool
    start: int
    end: int


# A site's own reading of a call (includes, listings): its text, or None to fall back on ours.
Resolver = Callable[[Call], "str | None"]


def _string(text: str, pos: int) -> tuple[str, int] | None:
    """A quoted ("..." with escapes) or raw (`...`) argument at `pos`: (value, end)."""
    quote = text[pos]
    if quote == "`":
        end = text.find("`", pos + 1)
        return (text[pos + 1 : end], end + 1) if end >= 0 else None
    match = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL).match(text, pos)
    if not match:
        return None
    return re.sub(r"\\(.)", r"\1", match[1]), match.end()


def _parse_tag(text: str, start: int) -> _Tag | None:
    """The shortcode tag opening at `start` (`{{<` or `{{%`), or None when it is not one."""
    delim = text[start + 2]
    close = ">}}" if delim == "<" else "%}}"
    name = _NAME.match(text, start + 3)
    if not name:
        return None
    call = Call(name[2], markdown=delim == "%")
    pos = name.end()
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith(close, pos):
            return _Tag(call, bool(name[1]), False, start, pos + 3)
        if text.startswith("/" + close, pos):
            return _Tag(call, bool(name[1]), True, start, pos + 4)
        key = None
        bare = _BARE.match(text, pos)
        if bare and text.startswith("=", bare.end()):
            key, pos = bare[0].lower(), bare.end() + 1
        if pos < len(text) and text[pos] in '"`':
            found = _string(text, pos)
            if found is None:
                return None
            value, pos = found
        else:
            bare = _BARE.match(text, pos)
            if not bare or not bare[0]:
                return None
            value, pos = bare[0], bare.end()
        if key is None:
            call.args.append(value)
        else:
            call.params[key] = value
    return None


def _tokens(text: str) -> list[str | _Tag]:
    tokens: list[str | _Tag] = []
    pos = 0
    for match in _OPEN.finditer(text):
        if match.start() < pos:
            continue
        tag = _parse_tag(text, match.start())
        if tag is None:
            continue
        tokens += [text[pos : tag.start], tag]
        pos = tag.end
    tokens.append(text[pos:])
    return tokens


def _pairs(tokens: list[str | _Tag]) -> dict[int, int]:
    """Opening tag index -> its closing tag's index (innermost first, by name)."""
    open_by_name: dict[str, list[int]] = {}
    pairs: dict[int, int] = {}
    for i, token in enumerate(tokens):
        if not isinstance(token, _Tag) or token.self_closing:
            continue
        stack = open_by_name.setdefault(token.call.name, [])
        if not token.closing:
            stack.append(i)
        elif stack:
            pairs[stack.pop()] = i
    return pairs


def _line_indent(tokens: list[str | _Tag], i: int, first: int) -> str | None:
    """The whitespace tag `i` follows on its line, or None when text or a tag comes first."""
    before = tokens[i - 1] if i > first else ""
    if not isinstance(before, str) or ("\n" not in before and i - 1 > 0):
        return None
    line = before.rsplit("\n", 1)[-1]
    return line if not line.strip() else None


def expand(text: str, resolve: Resolver) -> str:
    """`text` with every shortcode replaced by what it renders as; escaped ones stay literal."""
    escaped: list[str] = []

    def hide(match: re.Match[str]) -> str:
        escaped.append("{{" + match[1] + match[2] + match[3] + "}}")
        return f"\ue010{len(escaped) - 1}\ue011"

    tokens = _tokens(_ESCAPED.sub(hide, text))
    out = _render(tokens, 0, len(tokens), _pairs(tokens), resolve)
    return re.sub("\ue010(\\d+)\ue011", lambda m: escaped[int(m[1])], out)


def _render(tokens: list[str | _Tag], i: int, j: int, pairs: dict[int, int], resolve: Resolver) -> str:
    out: list[str] = []
    first = i
    while i < j:
        token = tokens[i]
        if isinstance(token, str):
            out.append(token)
            i += 1
            continue
        end = i
        if not token.closing:
            if i in pairs and pairs[i] < j:
                end = pairs[i]
                token.call.inner = _render(tokens, i + 1, end, pairs, resolve)
            text = resolve(token.call)
            text = reduce(token.call) if text is None else text
            indent = _line_indent(tokens, i, first)
            after = tokens[end + 1] if end + 1 < j else ""
            alone = isinstance(after, str) and not after.split("\n", 1)[0].strip()
            if indent is not None and alone and text.strip():  # a block of its own: kept apart, indented as the tag was
                text = "\n" + indent + text.strip("\n").replace("\n", "\n" + indent) + "\n"
            out.append(text)
        i = end + 1  # a closing tag without its opening one renders as nothing
    return "".join(out)


def _format(code: str) -> str:
    """The configuration language a code-toggle's content is written in."""
    try:
        tomllib.loads(code)
        return "toml"
    except (tomllib.TOMLDecodeError, RecursionError):
        pass
    if code.lstrip().startswith(("{", "[")):
        try:
            json.loads(code)
            return "json"
        except ValueError:
            pass
    try:
        bounded_yaml.load(code)
    except bounded_yaml.Refused:
        pass  # YAML all the same: only its aliases' expansion is refused, and nothing is built from it
    except yaml.YAMLError:
        return ""
    return "yaml"


def _code_span(code: str) -> str:
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", code)), default=0) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def reduce(call: Call) -> str:
    """What a shortcode renders as, for a reader: Hugo's embedded ones, the feature-state badges
    and code-toggle of gohugo.io's docs, else the inner text (or a version argument)."""
    name, inner = call.name.lower(), call.inner
    body = textwrap.dedent(inner).strip("\n") if inner else ""
    if name in ("new-in", "deprecated-in"):
        version = call.get(0).lstrip("vV")
        label = ("New in" if name == "new-in" else "Deprecated in") + (f" v{version}" if version else "")
        return f"{label}\n\n{body}" if body.strip() else label
    if name == "code-toggle":  # one block, in the language it is written in (the site shows it in three)
        if not body.strip():
            return ""  # config=/dataKey= read the site's data files, which are not content
        language = _format(body)
        file = call.get("file")
        title = file if call.flag("fm") or not file or "." in file.rsplit("/", 1)[-1] else f"{file}.{language}"
        return code_fence(body, language, title)
    if name == "highlight":
        if "hl_inline=true" in call.get(1).replace(" ", "").lower():
            return _code_span(body.strip())
        return code_fence(body, call.get(0) or call.get("lang"))
    if name == "hl":
        return _code_span(body.strip())
    if name == "details":
        summary = call.get("summary") or "Details"
        return f"**{summary}**\n\n{body}"
    if name == "figure":
        return call.get("caption") or call.get("title")
    if name in ("ref", "relref"):
        return call.get(0) or call.get("path")
    if name in _HIDDEN:
        return ""  # an image, an embed or a table drawn from data files
    if inner is not None:
        return inner
    version = call.get(0)
    if _ABOUT_VERSIONS.search(name) and _VERSION.fullmatch(version):
        return f"{name.replace('-', ' ').replace('_', ' ').capitalize()} {version}"
    return ""
