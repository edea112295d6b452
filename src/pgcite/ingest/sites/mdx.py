"""MDX (Docusaurus, Starlight, any .mdx page): what only MDX has, turned into Markdown before the
shared cleaning. `mdx-code-block` fences are unwrapped (their content is MDX, not code shown to
the reader); import/export statements are dropped, but a Markdown file imported as a component
is inlined where the component is placed (a partial, with its props), and a file imported with
`!!raw-loader!` becomes a code block where `<CodeBlock>{It}</CodeBlock>` shows it. JSX tags,
`{expressions}` and `{/* comments */}` are left to markup.clean_prose (Dialect.jsx)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from pgcite.ingest import markup
from pgcite.ingest.anchors import GITHUB
from pgcite.ingest.markdown import Dialect, split_front_matter
from pgcite.ingest.sites.base import Includes, code_fence, fence_language
from pgcite.ingest.tags import iter_tags

__all__ = ["MDX", "MdxPages", "prepare_mdx"]

MDX = Dialect(anchors=GITHUB, indented_code=False, jsx=True)

_ESM_START = re.compile(
    r"^(?:import\s+(?:[\w*{}\s,]+?\s+from\s+)?['\"]|import\s+type\s|export\s+(?:default\b|const\b|let\b|var\b|function\b|class\b|async\b|\{|\*))"
)
_DEFAULT_IMPORT = re.compile(
    r"\bimport\s+(?P<name>[A-Za-z_$][\w$]*)\s*(?:,\s*\{[^}]*\}\s*)?from\s+['\"](?P<path>[^'\"]+)['\"]"
)
_RAW_LOADER = "!!raw-loader!"
_PROPS = re.compile(r"\{\s*props\.([A-Za-z_$][\w$]*)\s*\}")


@dataclass(frozen=True)
class _Imports:
    partials: dict[str, str]  # component name -> site path of the Markdown it renders
    raw: dict[str, str]  # variable name -> site path of the file it holds as text


def _unwrap_code_blocks(text: str) -> str:
    out: list[str] = []
    for run, fence in markup.split_fenced(text):
        if fence is not None and fence.info.split()[:1] == ["mdx-code-block"]:
            inner = run[1:-1] if len(run) > 1 and markup.fence_closes(run[-1], fence) else run[1:]
            out.append(_unwrap_code_blocks("\n".join(inner)))
        else:
            out.append("\n".join(run))
    return "\n".join(out)


def _site_path(target: str, includes: Includes) -> str | None:
    """Where an import points, as a site path; None for packages (@theme/..., react...)."""
    if target.startswith("@site/"):
        return includes.resolve(target[len("@site/") :], relative_to="")
    if target.startswith((".", "/")):
        return includes.resolve(target)
    return None


def _take_imports(text: str, includes: Includes) -> tuple[str, _Imports]:
    """`text` without its ESM statements (a paragraph starting with import/export), and what the
    imports that matter name."""
    partials: dict[str, str] = {}
    raw: dict[str, str] = {}
    out: list[str] = []
    for run, fence in markup.split_fenced(text):
        if fence is not None:
            out.append("\n".join(run))
            continue
        lines: list[str] = []
        esm: list[str] = []
        previous_blank = True
        for line in run:
            if esm or (previous_blank and _ESM_START.match(line.lstrip())):
                if line.strip():
                    esm.append(line)
                    previous_blank = False
                    continue
                _record(" ".join(esm), includes, partials, raw)
                esm = []
            lines.append(line)
            previous_blank = not line.strip()
        if esm:
            _record(" ".join(esm), includes, partials, raw)
        out.append("\n".join(lines))
    return "\n".join(out), _Imports(partials, raw)


def _record(statement: str, includes: Includes, partials: dict[str, str], raw: dict[str, str]) -> None:
    for match in _DEFAULT_IMPORT.finditer(statement):
        name, target = match["name"], match["path"]
        if target.startswith(_RAW_LOADER):
            path = _site_path(target[len(_RAW_LOADER) :], includes)
            if path:
                raw[name] = path
        elif target.endswith((".md", ".mdx")):
            path = _site_path(target, includes)
            if path:
                partials[name] = path


def _language(attrs: dict[str, str]) -> str:
    if attrs.get("language"):
        return attrs["language"]
    return next((c[len("language-") :] for c in attrs.get("classname", "").split() if c.startswith("language-")), "")


def _inline_components(text: str, imports: _Imports, includes: Includes, depth: int) -> str:
    """Partials and raw-loader code blocks in place of the components that show them."""
    if not imports.partials and not imports.raw:
        return text
    out: list[str] = []
    pos = 0
    tags = list(iter_tags(text))
    skip_to = -1
    for index, tag in enumerate(tags):
        if tag.start < skip_to or tag.closing:
            continue
        replacement: str | None = None
        end = tag.end
        if tag.name in imports.partials:
            if not tag.self_closing:  # children are not passed to a partial here: skip to its end
                close = next((t for t in tags[index + 1 :] if t.closing and t.name == tag.name), None)
                end = close.end if close else tag.end
            replacement = _partial(imports.partials[tag.name], tag.attrs, includes, depth)
        elif tag.name == "CodeBlock" and not tag.self_closing:
            close = next((t for t in tags[index + 1 :] if t.closing and t.name == "CodeBlock"), None)
            inner = text[tag.end : close.start].strip() if close else ""
            name = inner[1:-1].strip() if inner.startswith("{") and inner.endswith("}") else ""
            if close and name in imports.raw:
                code = includes.read(imports.raw[name], depth, imports.raw[name])
                end = close.end
                language = _language(tag.attrs) or fence_language(imports.raw[name])
                replacement = (
                    "" if code is None else "\n\n" + code_fence(code, language, tag.attrs.get("title", "")) + "\n\n"
                )
        if replacement is None:
            continue
        out.append(text[pos : tag.start])
        out.append(replacement)
        pos = skip_to = end
    out.append(text[pos:])
    return "".join(out)


def _partial(path: str, props: dict[str, str], includes: Includes, depth: int) -> str:
    text = includes.read(path, depth, posixpath.basename(path))
    if text is None:
        return ""
    body, _ = split_front_matter(text)
    body = _PROPS.sub(lambda m: props.get(m.group(1).lower(), ""), body)
    return "\n\n" + prepare_mdx(body, includes.at(path), depth + 1) + "\n\n"


def prepare_mdx(body: str, includes: Includes, depth: int = 0) -> str:
    text = _unwrap_code_blocks(body)
    text, imports = _take_imports(text, includes)
    return "\n".join(
        "\n".join(run) if fence else _inline_components("\n".join(run), imports, includes, depth)
        for run, fence in markup.split_fenced(text)
    )


class MdxPages:
    """For a site whose `.mdx` pages are MDX and whose other pages are its own Markdown (Starlight,
    plain folders): put before `Site` in the bases."""

    def dialect_for(self, site_path: str) -> Dialect:
        return MDX if site_path.lower().endswith(".mdx") else super().dialect_for(site_path)  # type: ignore[misc]

    def prepare(self, body: str, includes: Includes) -> str:
        if includes.page.lower().endswith(".mdx"):
            return prepare_mdx(body, includes)
        return super().prepare(body, includes)  # type: ignore[misc]
