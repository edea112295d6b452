"""reStructuredText as Sphinx publishes it, turned into Markdown: parsed by docutils (Sphinx's own
parser), with Sphinx's roles shown as their text (`:ref:`, `:doc:`, `:class:` ...), its directives
read as a reader sees them (code blocks, admonitions, version notes, object descriptions) or left
out where a reader never sees them (`toctree`, `index`, autodoc), and `include` and
`literalinclude` read through the site's bounded includes. Each section's heading carries the id
docutils gives it, which is the id Sphinx's HTML gives the section, so citations open it.

docutils' own file insertion and raw HTML are turned off: nothing is read from outside the site."""

from __future__ import annotations

import io
import posixpath
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from docutils import nodes, statemachine
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.utils import new_document, unescape

from pgcite.ingest.sites.base import Includes, fence_language, select_lines
from pgcite.ingest.sites.rst_extensions import ANY_OPTIONS, autodoc_left_out, holds_python
from pgcite.ingest.sites.rst_writer import DoctreeWriter
from pgcite.ingest.sites.sphinx_outline import Outline

__all__ = ["rst_markdown", "target_title"]

_PARSER = Parser()
# Sphinx roles shown as code (`~a.b.C` shows C); every other role shows its text.
_CODE_ROLES = {
    "attr", "class", "const", "data", "exc", "func", "meth", "mod", "obj", "type", "option", "envvar",
    "file", "command", "program", "samp", "code", "makevar", "kbd", "member", "var", "struct", "macro",
    "enum", "enumerator", "expr", "texpr", "any", "cfunc", "cmember", "cmacro", "ctype",
}  # fmt: skip
_CALLED_ROLES = {"func", "meth"}  # Sphinx adds `()` to these
# Directives whose output a reader never sees in the text (navigation, index entries, settings).
_UNSEEN = {
    "toctree", "index", "highlight", "currentmodule", "module", "default-domain", "tabularcolumns",
    "sectionauthor", "moduleauthor", "codeauthor", "meta", "raw", "only-latex", "todolist",
    "autosummary", "contents", "py:currentmodule", "py:module", "c:namespace", "cpp:namespace",
}  # fmt: skip
_AUTODOC = re.compile(r"^(?:\w+:)?auto[a-z]*$")  # automodule, autoclass, autofunction, ...
_VERSIONS = {
    "versionadded": "Added in version", "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
}  # fmt: skip
_ADMONITION_NAMES = {"seealso": "See also", "todo": "Todo"}
_DIRECTIVE_NAME = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z][\w.+:-]*)[ \t]*::", re.MULTILINE)
_ROLE_NAME = re.compile(r"(?<![\w`]):([A-Za-z][\w.+:-]*):`")
_EXPLICIT_TITLE = re.compile(r"^(.+?)\s*(?<!\x00)<(.*?)>$", re.DOTALL)
# docutils' own limit is 10,000 characters a line, past which it reads nothing of the page: generated
# tables, one-line JSON and inline images go past it. A paragraph costs docutils the same whether
# its characters are on one line or many, so a line may be much longer.
LINE_LIMIT = 1_000_000
_TOO_LONG = re.compile(r"\bLine (\d+) exceeds the line-length-limit")


@dataclass
class _Context:
    """What one page's directives share: its includes, the site paths of its source folder (where
    `/x` starts) and of the files being read, and how deep the includes go."""

    includes: Includes
    source_dir: str
    depth: dict[str, int] = field(default_factory=dict)
    autodoc: list[str] = field(default_factory=list)  # the autodoc directives met, left out
    outline: Outline | None = None  # the site's titles, for references written without one

    def problem(self, line: str) -> None:
        self.includes.problems.append(line)


def rst_markdown(
    text: str,
    site_path: str,
    includes: Includes,
    source_dir: str,
    outline: Outline | None = None,
    *,
    level: int = 1,
    autodoc: list[str] | None = None,
) -> str:
    """The page `text` (site path `site_path`) as Markdown, its includes read in; ValueError (one
    line) for a page docutils cannot read whole (a line over LINE_LIMIT characters, nesting
    deeper than Python's stack), which would otherwise come out empty or half read. `level`: its
    top sections' heading level (deeper for reST inside a MyST section); `autodoc`: where to note
    the autodoc directives left out, for the caller to report once (else reported here)."""
    settings = get_default_settings(Parser)
    settings.report_level = 5  # a broken construct becomes text; the page is still read
    settings.halt_level = 5
    settings.warning_stream = io.StringIO()
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings.auto_id_prefix = "id"  # Sphinx's: a repeated title's section is id1, id2 ...
    settings.line_length_limit = LINE_LIMIT
    noted = [] if autodoc is None else autodoc
    settings.pgcite = context = _Context(includes, source_dir, {site_path: 0}, noted, outline)
    document = new_document(site_path, settings)
    try:
        with _sphinx_vocabulary():
            _register_unknown(text)
            _PARSER.parse(text, document)
        _check_read_whole(document)
        blocks = DoctreeWriter(document).blocks(document, level)
    except RecursionError:  # docutils and the writer recurse once (or more) a level
        raise ValueError(
            "nested deeper than pgcite reads reStructuredText (lists, quotes or directives inside one "
            "another about a hundred levels deep): flatten it"
        ) from None
    if context.autodoc and autodoc is None:
        context.problem(autodoc_left_out(context.autodoc))
    return "\n\n".join(blocks) + "\n"


def _check_read_whole(document: nodes.document) -> None:
    """docutils meets a line over its limit by reading none of the page (one error in its place)."""
    for message in document.findall(nodes.system_message):
        if found := _TOO_LONG.search(message.astext()):
            raise ValueError(
                f"line {int(found[1]):,} is over {LINE_LIMIT:,} characters, more than docutils reads in "
                "one line: break it into shorter lines"
            )


# --- roles ---------------------------------------------------------------------------------


def _role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None):
    """A Sphinx role as the page shows it: the explicit title of `title <target>`, else the
    target (`~a.b.C` as C, `!x` as x), as code for the roles that name code."""
    text = unescape(text)
    explicit = _EXPLICIT_TITLE.match(text)
    shown = explicit.group(1) if explicit else text
    short = name.rsplit(":", 1)[-1]
    if not explicit:
        shown = shown.lstrip("!")
        if shown.startswith("~"):
            shown = shown[1:].rsplit(".", 1)[-1]
        if short in {"doc", "ref"}:
            ctx = inliner.document.settings.pgcite
            shown = target_title(short, shown, ctx.includes, ctx.outline)
    if short in _CALLED_ROLES and not explicit and not shown.endswith(")"):
        shown += "()"
    node: nodes.Node = nodes.literal(rawtext, shown) if short in _CODE_ROLES else nodes.Text(shown)
    return [node], []


def target_title(role: str, target: str, includes: Includes | None, outline: Outline | None) -> str:
    """What Sphinx shows for a `doc` or `ref` role without a title: its target's title; else, where
    that is not found, the target's name as words ("deploying/index": deploying)."""
    if includes is not None and outline is not None:
        found = outline.doc(target, includes.page) if role == "doc" else outline.ref(target, includes.page)
        if found is not None:
            includes.depends_on(found[0])
            return found[1]
    parts = [p for p in target.split("/") if p and p != "index"] or [target]
    return parts[-1].replace("-", " ").replace("_", " ")


# --- directives ----------------------------------------------------------------------------


class _Content(Directive):
    """A directive pgcite does not know: its content is read as text, its arguments dropped; or
    shown as code where it is Python (an extension's example, `.. click:example::`)."""

    optional_arguments = 10
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        if holds_python(self.content):
            code = "\n".join(self.content).strip("\n")  # a blank line after the directive is not code
            return [nodes.literal_block(code, code, language="python")]
        container = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, container)
        return container.children


class _Unseen(_Content):
    def run(self) -> list[nodes.Node]:
        name = self.name.rsplit(":", 1)[-1]
        if _AUTODOC.match(name):
            self.state.document.settings.pgcite.autodoc.append(f"{self.name} {' '.join(self.arguments)}".strip())
        return []


class _Code(Directive):
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        return [nodes.literal_block(code, code, language=(self.arguments or [""])[0].strip())]


class _Version(Directive):
    required_arguments = 1
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        version, *rest = " ".join(self.arguments).split(None, 1)
        line = nodes.paragraph()
        line += nodes.Text(f"{_VERSIONS[self.name]} {version}" + (": " if rest else "."))
        if rest:  # the text after the version, its inline markup read
            line += self.state.inline_text(rest[0], self.lineno)[0]
        container = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, container)
        return [line, *container.children]


class _Titled(Directive):
    """`seealso`, `todo`: an admonition with its name as title."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        node = nodes.admonition()
        node += nodes.title(text=_ADMONITION_NAMES[self.name])
        if self.arguments:
            node += nodes.paragraph(text=self.arguments[0])
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class _Described(Directive):
    """An object description (`.. function:: name(args)`, `.. py:class::`, `.. option::`): the
    signature as a code line, then its text."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for signature in self.arguments[0].split("\n"):
            if signature.strip():
                line = nodes.paragraph()
                line += nodes.literal(signature, signature.strip().rstrip("\\").strip())
                out.append(line)
        container = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, container)
        return out + container.children


def _current(directive: Directive) -> str:
    """The site path of the file the directive is written in (the page or an included file)."""
    source = directive.state_machine.input_lines.source(directive.lineno - directive.state_machine.input_offset - 1)
    return str(source or directive.state.document["source"])


def _read(directive: Directive) -> tuple[_Context, str, str] | None:
    """(context, site path, text) of an include's file, read through the site's includes; None
    (the reason noted) when it cannot be."""
    ctx: _Context = directive.state.document.settings.pgcite
    target = directive.arguments[0].strip()
    if target.startswith("<"):  # docutils' standard definitions (<isonum.txt>): nothing to show
        return None
    current = _current(directive)
    site_path = (
        posixpath.normpath(posixpath.join(ctx.source_dir, target.lstrip("/")))
        if target.startswith("/")
        else posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
    )
    text = ctx.includes.read(site_path, ctx.depth.get(current, 0), target)
    return None if text is None else (ctx, site_path, _between(text, directive.options))


def _between(text: str, options: dict[str, Any]) -> str:
    if after := options.get("start-after"):
        text = text.split(after, 1)[1] if after in text else text
    if before := options.get("end-before"):
        text = text.split(before, 1)[0]
    return text


class _Include(Directive):
    required_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        found = _read(self)
        if found is None:
            return []
        ctx, site_path, text = found
        if "literal" in self.options or "code" in self.options:
            language = self.options.get("code") or ""
            return [nodes.literal_block(text, text, language=language if isinstance(language, str) else "")]
        ctx.depth[site_path] = ctx.depth.get(_current(self), 0) + 1
        _register_unknown(text)
        self.state_machine.insert_input(statemachine.string2lines(text, 8, convert_whitespace=True), site_path)
        return []


class _LiteralInclude(Directive):
    required_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[Any] = ANY_OPTIONS

    def run(self) -> list[nodes.Node]:
        found = _read(self)
        if found is None:
            return []
        _, site_path, text = found
        if "pyobject" in self.options:
            self.state.document.settings.pgcite.problem(
                f"literalinclude {self.arguments[0]} :pyobject: {self.options['pyobject']}: the whole file is shown"
            )
        if isinstance(self.options.get("lines"), str):
            text = select_lines(text, self.options["lines"].replace("-", ":"))
        for key in ("prepend", "append"):
            if isinstance(self.options.get(key), str):
                text = self.options[key] + "\n" + text if key == "prepend" else text + "\n" + self.options[key]
        language = self.options.get("language")
        language = language if isinstance(language, str) else fence_language(site_path)
        node = nodes.literal_block(text, text.strip("\n"), language=language)
        if isinstance(self.options.get("caption"), str):
            node["caption"] = self.options["caption"]
        return [node]


_DESCRIBED = {
    "function", "class", "method", "attribute", "data", "exception", "decorator", "option", "envvar", "describe",
    "object", "program", "confval", "member", "type", "macro", "struct", "enum", "var", "property",
}  # fmt: skip
_DIRECTIVES: dict[str, type[Directive]] = {
    **dict.fromkeys(_UNSEEN, _Unseen),
    **dict.fromkeys(("code-block", "sourcecode", "code"), _Code),
    **dict.fromkeys(_VERSIONS, _Version),
    **dict.fromkeys(_ADMONITION_NAMES, _Titled),
    **dict.fromkeys(_DESCRIBED, _Described),
    **dict.fromkeys(("only", "glossary", "centered", "hlist", "tab", "tabs", "group-tab", "code-tab"), _Content),
    "include": _Include,
    "literalinclude": _LiteralInclude,
}
_ROLES = _CODE_ROLES | {
    "ref", "doc", "term", "abbr", "guilabel", "menuselection", "numref", "keyword", "download", "pep", "rfc",
    "dfn", "mimetype", "newsgroup", "regexp", "token",
}  # fmt: skip
_VOCABULARY = threading.Lock()


@contextmanager
def _sphinx_vocabulary() -> Iterator[None]:
    """docutils with Sphinx's directives and roles, for one parse: its registries are module-wide,
    so they are swapped in under a lock and put back, and plain docutils elsewhere in the process
    stays as it was."""
    with _VOCABULARY:
        saved = dict(directives._directives), dict(roles._roles)
        directives._directives.update(_DIRECTIVES)
        roles._roles.update(dict.fromkeys(_ROLES, _role))
        try:
            yield
        finally:
            for registry, before in zip((directives._directives, roles._roles), saved, strict=True):
                registry.clear()
                registry.update(before)


def _register_unknown(text: str) -> None:
    """Roles and directives of Sphinx's domains and extensions, met in `text`, registered before it
    is parsed (docutils knows only its own): `py:class`, `.. py:function::` and the like."""
    for name in set(_DIRECTIVE_NAME.findall(text)):
        if name not in directives._directives and name not in directives._directive_registry:
            short = name.rsplit(":", 1)[-1]
            if _AUTODOC.match(short) or short in _UNSEEN:
                cls: type[Directive] = _Unseen
            else:
                cls = _Described if short in _DESCRIBED else _Content
            directives._directives[name] = cls
    for name in set(_ROLE_NAME.findall(text)):
        if name not in roles._roles and name not in roles._role_registry:
            roles._roles[name] = _role
