"""A Sphinx project's configuration, read and never run: conf.py parsed with `ast` (its literal
top-level settings; its extensions however they are added, in any branch), and Read the Docs'
`.readthedocs.yaml`, looked for from the folder of conf.py up to the project's root."""

from __future__ import annotations

import ast
import os
import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import Any

import yaml

from pgcite.errors import SourceError, first_line
from pgcite.ingest import bounded_yaml
from pgcite.ingest.folder import FolderSource
from pgcite.ingest.sites.base import Files

__all__ = ["BUILDERS", "read_conf", "read_the_docs_builder", "uses_myst"]

BUILDERS = ("html", "dirhtml")  # the builders whose routes pgcite gives (--sphinx-builder)
_MYST = {"myst_parser", "myst_nb"}
# Sphinx run from a shell line: `sphinx-build ...`, `python -m sphinx ...`, up to the next command.
_SPHINX_RUN = re.compile(r"(?:\bsphinx-build\b|-m[ \t]+sphinx(?:\.cmd\.build)?\b(?![.\w-]))(?P<args>[^;&|\n]*)")
_READ_THE_DOCS = (".readthedocs.yaml", ".readthedocs.yml")


def read_conf(text: str) -> dict[str, Any]:
    """The literal values conf.py assigns at its top level (`project = "x"`, lists, dicts); what is
    computed (`release = get_version()`) is left out: the file is never run. `extensions` is every
    extension named in the file however it is added (below). A file Python's parser cannot read
    for its nesting is a SourceError (one line); one that is not Python sets nothing."""
    tree = _parse(text)
    if tree is None:
        return {}
    found: dict[str, Any] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                found[target.id] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    extensions, assigned = _extensions(tree)
    if extensions:
        found["extensions"] = extensions
    # MyST's settings wherever they are set (None where not a top-level literal): a sign of MyST.
    found.update({name: found.get(name) for name in assigned if name.startswith("myst_")})
    return found


def uses_myst(conf: dict[str, Any]) -> bool:
    """MyST's parser among the extensions, or a `myst_*` setting (which only MyST reads)."""
    extensions = conf.get("extensions") if isinstance(conf.get("extensions"), list) else []
    return any(str(e).split(".")[0] in _MYST for e in extensions or ()) or any(k.startswith("myst_") for k in conf)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None  # not Python (or not this Python's): not a configuration Sphinx could run either
    except (MemoryError, RecursionError) as err:
        raise SourceError(
            f"conf.py nests deeper than Python's parser reads ({type(err).__name__}), so Sphinx could not run it "
            "either: simplify it, or name the site generator with --site"
        ) from None


def _extensions(tree: ast.Module) -> tuple[list[str], set[str]]:
    """(the extensions conf.py names, in order, each once; every name it assigns), as someone
    reading it would see them: `extensions = [...]`, `+=`, `.append(x)`, `.extend((...))`,
    `.insert(i, x)` and `app.setup_extension(x)`, at the top or in any branch, function or loop."""
    named: list[ast.Constant] = []
    assigned: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            assigned |= names
            if "extensions" in names and node.value is not None:
                named += _listed(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, method = node.func.value, node.func.attr
            if method == "setup_extension" or (
                isinstance(owner, ast.Name) and owner.id == "extensions" and method in {"append", "insert"}
            ):
                named += [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            elif isinstance(owner, ast.Name) and owner.id == "extensions" and method == "extend" and node.args:
                named += _listed(node.args[0])
    named.sort(key=lambda c: (c.lineno, c.col_offset))  # as written, not as walked
    return list(dict.fromkeys(str(c.value) for c in named)), assigned


def _listed(value: ast.expr) -> list[ast.Constant]:
    """The strings listed in `value`: those of its list, tuple and set displays, however combined
    (`base + ["x"]`, `[...] if on_rtd else [...]`)."""
    return [
        element
        for node in ast.walk(value)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set))
        for element in node.elts
        if isinstance(element, ast.Constant) and isinstance(element.value, str)
    ]


def read_the_docs_builder(files: Files, problems: list[str]) -> str:
    """The builder Read the Docs runs (`sphinx: builder:` in .readthedocs.yaml, or the builder of
    a `sphinx-build` in its `build: jobs: build: html:` or its `build: commands:`), from the nearest
    settings file in the folder of conf.py or above it, up to the root of what pgcite may read (the
    project's root, where Read the Docs keeps it; never above); "html" when none says. A settings
    file that cannot be read as YAML is passed over, and said in `problems`."""
    for up in range(_levels_readable(files) + 1):
        for name in _READ_THE_DOCS:
            path = "../" * up + name
            try:
                settings = bounded_yaml.load(files.read(path))
            except OSError:
                continue
            except (ValueError, yaml.YAMLError) as err:  # bounded_yaml.Refused is a ValueError
                problems.append(
                    f"{path} left out ({first_line(err)}): read as if absent; --sphinx-builder says the builder"
                )
                continue
            return _builder(settings)
    return "html"


def _builder(settings: Any) -> str:
    if not isinstance(settings, dict):
        return "html"
    sphinx = settings.get("sphinx")
    if isinstance(sphinx, dict) and sphinx.get("builder"):
        return str(sphinx["builder"])
    build = _mapping(settings, "build")
    # The HTML Read the Docs publishes is built by jobs.build.html; the other jobs (pdf, epub,
    # pre_build) make no pages, so a builder there is not the site's.
    html = _mapping(_mapping(build, "jobs"), "build").get("html")
    for commands in (html, build.get("commands")):
        for command in commands if isinstance(commands, list) else []:
            if isinstance(command, str) and (found := next(_builders(command), None)):
                return found
    return "html"


def _mapping(settings: dict, key: str) -> dict:
    """The mapping under `key`, or an empty one where the settings hold something else."""
    value = settings.get(key)
    return value if isinstance(value, dict) else {}


def _builders(command: str) -> Iterator[str]:
    """The builders the Sphinx runs in a shell line name: `-b dirhtml`, `-bdirhtml`, `-M dirhtml`,
    `--builder dirhtml`, `--builder=dirhtml`."""
    for run in _SPHINX_RUN.finditer(command):
        try:
            words = shlex.split(run["args"])
        except ValueError:  # an unclosed quote: the words as they stand
            words = run["args"].split()
        for word, after in zip(words, [*words[1:], ""], strict=True):
            if word in ("-b", "-M", "--builder") and after:
                yield after
            elif word.startswith("--builder="):
                yield word.split("=", 1)[1]
            elif word.startswith(("-b", "-M")) and len(word) > 2 and word[2:].isidentifier():
                yield word[2:]


def _levels_readable(files: Files) -> int:
    """How many folders above the site's root (the folder of conf.py) a folder source may read:
    up to its include root (the project's root it found, or --include-root). Other sources read
    nothing above their root."""
    source = files.source
    if not isinstance(source, FolderSource):
        return 0
    above = files.prefix.count("/") + 1 if files.prefix else 0
    site_root = os.path.normpath(os.path.join(source.root, *[".."] * above))
    inside = os.path.relpath(site_root, source.include_root)
    if inside == "." or inside.startswith(".."):
        return 0
    return len(posixpath.normpath(inside.replace(os.sep, "/")).split("/"))
