"""Sphinx: a folder with `conf.py` is read as Sphinx publishes it. conf.py is parsed, never run
(sphinx_conf.py): its plain assignments say the pages' suffixes (`source_suffix`, MyST Markdown
where `myst_parser` is among the `extensions`, however conf.py adds it, or a `myst_*` setting is
set), what is left out (`exclude_patterns`), the base URL (`html_baseurl`), the page suffix
(`html_file_suffix`) and the language; Read the Docs' `.readthedocs.yaml`, at the project's root,
says whether it is built as `dirhtml` (`guide/install/`), unless the ingest names the builder.
reStructuredText goes through docutils (rst.py), and so does MyST's `{eval-rst}`; pages route
`guide/install.rst` -> `guide/install.html`; sections are anchored by the ids docutils makes,
which are the ids in Sphinx's HTML."""

from __future__ import annotations

import posixpath
import re
import textwrap
from collections.abc import Mapping
from typing import Any

from docutils.nodes import make_id

from pgcite.errors import SourceError
from pgcite.ingest.anchors import AnchorRule
from pgcite.ingest.markdown import Dialect
from pgcite.ingest.markup import split_fenced
from pgcite.ingest.sites.base import Files, Includes, Site, code_fence, indent_lines
from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sites.rst import rst_markdown, target_title
from pgcite.ingest.sites.rst_extensions import autodoc_left_out, holds_python
from pgcite.ingest.sites.sphinx_conf import BUILDERS, read_conf, read_the_docs_builder, uses_myst
from pgcite.ingest.sites.sphinx_outline import Outline

__all__ = ["Sphinx", "read_conf"]


def _numbered(slug: str, used: set[str]) -> str:
    """The id Sphinx gives a section whose id is taken (or empty): id1, id2 ..."""
    candidate, n = slug, 1
    while candidate in used or not candidate:
        candidate, n = f"id{n}", n + 1
    used.add(candidate)
    return candidate


# docutils' ids as Sphinx sets them up: ASCII lower case, other characters to `-`; id1 for a repeat.
DOCUTILS = AnchorRule(make_id, _numbered)
_SPHINX_NAMES = {
    "project", "extensions", "html_theme", "master_doc", "root_doc", "source_suffix", "html_baseurl",
    "release", "exclude_patterns", "templates_path", "html_static_path", "intersphinx_mapping",
}  # fmt: skip
_ALWAYS_EXCLUDED = ("_build/**", "**/_build/**", "Thumbs.db", ".DS_Store", "**/_templates/**")


class Sphinx(Site):
    name = "sphinx"
    markers = ("conf.py",)
    base_url_setting = "conf.py's html_baseurl"

    def __init__(self, files: Files, *, builder: str | None = None) -> None:
        """builder: `html` or `dirhtml`, as the ingest names it; else Read the Docs' settings say."""
        super().__init__(files)
        if builder is not None and builder not in BUILDERS:
            raise SourceError(f"unknown Sphinx builder {builder!r}; use {' or '.join(BUILDERS)}")
        try:
            self.conf = read_conf(files.read("conf.py"))
        except OSError:
            self.conf = {}
        self.myst = uses_myst(self.conf)
        self.suffixes = self._suffixes()
        self.base_url = str(self.conf.get("html_baseurl") or "")
        self.page_suffix = str(self.conf.get("html_file_suffix") or ".html")
        self.dirhtml = (builder or read_the_docs_builder(files, self.problems)) == "dirhtml"
        root = self.conf.get("root_doc") or self.conf.get("master_doc") or "index"
        self.outline = Outline(files, self.suffixes, str(root))
        if tag := language_tag(self.conf.get("language")):
            self.languages, self.default_language = (tag,), tag

    @classmethod
    def detect(cls, files: Files) -> bool:
        """conf.py that sets what a Sphinx configuration sets (any Python file may be conf.py)."""
        if not files.exists("conf.py"):  # before reading: a bucket would be asked for it
            return False
        try:
            return bool(_SPHINX_NAMES & set(read_conf(files.read("conf.py"))))
        except OSError:
            return False

    def _suffixes(self) -> tuple[str, ...]:
        suffix = self.conf.get("source_suffix")
        if isinstance(suffix, str):
            found = [suffix]
        elif isinstance(suffix, (list, tuple, dict)):
            found = [str(s) for s in suffix]
        else:
            found = [".rst"]
        if self.myst and ".md" not in found:
            found.append(".md")
        return tuple(s if s.startswith(".") else f".{s}" for s in found)

    @property
    def pages(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(f"*{suffix}" for suffix in self.suffixes)

    @property
    def partials(self) -> tuple[str, ...]:  # type: ignore[override]
        patterns = self.conf.get("exclude_patterns")
        own = [str(p) for p in patterns] if isinstance(patterns, (list, tuple)) else []
        return (*_ALWAYS_EXCLUDED, *own)

    def dialect_for(self, site_path: str) -> Dialect:
        return Dialect(anchors=DOCUTILS)

    @property
    def publishing(self) -> str:
        if self.dirhtml:
            return "dirhtml"
        return "" if self.page_suffix == ".html" else f"html {self.page_suffix}"

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        stem = self.outline.docname(site_path)
        if not self.dirhtml:
            return stem + self.page_suffix
        folder = stem[: -len("index")] if stem == "index" or stem.endswith("/index") else stem + "/"
        return folder  # dirhtml: guide/install/, guide/index -> guide/

    def split(self, site_path: str, text: str, problems: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        """reStructuredText has no front matter: a leading `---` is a title's overline."""
        return super().split(site_path, text, problems) if site_path.endswith(".md") else (text, {})

    def prepare(self, body: str, includes: Includes) -> str:
        if includes.page.endswith(".md"):
            autodoc: list[str] = []  # met in any {eval-rst} block: said once for the page, as for .rst
            markdown = myst_markdown(body, includes, self.outline, autodoc)
            if autodoc:
                includes.problems.append(autodoc_left_out(autodoc))
            return markdown
        return rst_markdown(body, includes.page, includes, "", self.outline)

    def position_of(self, site_path: str, includes: Includes) -> int | None:
        position, toctrees = self.outline.position(site_path)
        for page in toctrees:
            includes.depends_on(page)
        return position

    def fallback_title(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        return posixpath.splitext(posixpath.basename(site_path))[0].replace("_", " ").replace("-", " ")


# --- MyST Markdown -------------------------------------------------------------------------

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:.+-]+)\}[ \t]*(?P<argument>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
# A directive's options (`:caption: hello.py` lines) and the blank line that may end them: not content.
_OPTIONS = re.compile(r"\A(?:[ \t]*:[\w-]+:[^\n]*\n)+(?:[ \t]*\n)?")
_OPTION = re.compile(r"^[ \t]*:(?P<key>[\w-]+):[ \t]*(?P<value>[^\n]*)$", re.MULTILINE)
_MYST_ROLE = re.compile(r"\{(?P<name>[\w:.+-]+)\}`(?P<text>[^`]+)`")
# `(label)=` over a heading: the label is the id Sphinx's HTML links the section by.
_LABELLED_HEADING = re.compile(
    r"^\((?P<label>[\w.:-]+)\)=[ \t]*\n(?:[ \t]*\n)*(?P<heading>#{1,6}[ \t][^\n]*)$", re.MULTILINE
)
_LABEL = re.compile(r"^\([\w.:-]+\)=[ \t]*$\n?", re.MULTILINE)
_MYST_CODE = {"code-block", "code", "sourcecode", "code-cell"}
_MYST_ADMONITIONS = {
    "note", "warning", "tip", "important", "hint", "caution", "danger", "error", "attention",
    "seealso", "admonition", "versionadded", "versionchanged", "deprecated",
}  # fmt: skip


def myst_markdown(
    body: str, includes: Includes | None = None, outline: Outline | None = None, autodoc: list[str] | None = None
) -> str:
    """MyST's directives and roles as Markdown: ```{code-block} py as a code fence, ```{note} as a
    quoted note, ```{eval-rst} read as reStructuredText, ```{toctree} and autodoc gone (noted in
    `autodoc`), {ref}`text <x>` as its text ({doc}`x` as x's title), `(label)=` the id of the
    heading under it (else gone)."""
    body = _LABELLED_HEADING.sub(lambda m: f"{m['heading'].rstrip()} {{#{make_id(m['label'])}}}", body)
    body = _LABEL.sub("", body)
    body = _FENCE.sub(lambda m: _directive(m, includes, outline, autodoc), body)
    return _MYST_ROLE.sub(lambda m: _myst_role(m, includes, outline), body)


def _directive(
    match: re.Match[str], includes: Includes | None, outline: Outline | None, autodoc: list[str] | None
) -> str:
    name = match["name"].rsplit(":", 1)[-1]
    options = _OPTIONS.match(match["body"])
    text = match["body"][options.end() :] if options else match["body"]
    argument = match["argument"].strip()
    if name in _MYST_CODE:  # with its caption over it, as Sphinx shows it
        caption = {m["key"]: m["value"] for m in _OPTION.finditer(options[0])}.get("caption", "") if options else ""
        return code_fence(text, argument, caption.strip())
    if name == "eval-rst" and includes is not None:
        return _eval_rst(match, includes, outline, autodoc)
    if name in _MYST_ADMONITIONS:
        title = argument if name == "admonition" else name.replace("seealso", "see also").capitalize()
        inner = myst_markdown(text, includes, outline, autodoc).strip("\n")
        lines = inner.split("\n") if inner else []
        first = f"**{title}:** {lines[0]}" if lines else f"**{title}**"
        quoted = [first, *lines[1:]]
        return "\n".join(match["indent"] + ("> " + line if line else ">") for line in quoted)
    if name.startswith("auto") and autodoc is not None:
        autodoc.append(f"{match['name']} {argument}".strip())
    if name in {"toctree", "contents", "index"} or name.startswith("auto"):
        return ""
    if holds_python(text.split("\n")):  # an extension's example (```{click:example}): code, as in reST
        return indent_lines(code_fence(textwrap.dedent(text), "python"), match["indent"])
    return myst_markdown(text, includes, outline, autodoc)  # any other directive: its content


def _eval_rst(match: re.Match[str], includes: Includes, outline: Outline | None, autodoc: list[str] | None) -> str:
    """```{eval-rst}: its body read as the site's .rst pages are (directives, roles, code), its
    sections nested under the Markdown heading it follows, as MyST nests them."""
    rst = textwrap.dedent(match["body"])
    markdown = rst_markdown(rst, includes.page, includes, "", outline, level=_level_after(match), autodoc=autodoc)
    return indent_lines(markdown.strip("\n"), match["indent"])


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)", re.MULTILINE)


def _level_after(match: re.Match[str]) -> int:
    """One below the last Markdown heading before `match` (headings in code blocks are not), or 1
    where none is: a section of the reST is then the page's title, as in Sphinx."""
    levels = [
        len(found[1])
        for run, fence in split_fenced(match.string[: match.start()])
        if fence is None
        for found in _ATX.finditer("\n".join(run))
    ]
    return min(levels[-1] + 1, 6) if levels else 1


def _myst_role(match: re.Match[str], includes: Includes | None, outline: Outline | None) -> str:
    text = match["text"]
    explicit = re.match(r"^(.+?)\s*<(.*?)>$", text)
    shown = explicit.group(1) if explicit else text.lstrip("!~").rsplit(".", 1)[-1] if text.startswith("~") else text
    name = match["name"].rsplit(":", 1)[-1]
    if name in {"doc", "ref"} and not explicit:
        return target_title(name, text, includes, outline)
    return (
        f"`{shown}`"
        if name in {"class", "func", "meth", "attr", "mod", "obj", "exc", "data", "const", "code"}
        else shown
    )
