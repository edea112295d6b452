"""Directives of Sphinx extensions, which pgcite reads without running them: every option
accepted, an unknown directive whose content is Python shown as code (an extension's examples,
`.. click:example::`), and autodoc, which needs the project's code, said once a page."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence
from typing import Any

from docutils.parsers.rst import directives

__all__ = ["ANY_OPTIONS", "autodoc_left_out", "holds_python"]


class _AnyOptions(dict):
    """Every option accepted, as text: a directive's options are read, whatever Sphinx or an
    extension names them, and not mistaken for its arguments or content."""

    def __missing__(self, key: str) -> Any:
        return directives.unchanged

    def __bool__(self) -> bool:
        return True


ANY_OPTIONS = _AnyOptions()

# Statements that do something: prose that happens to parse (a lone word, `a - b`) does none of them.
_DOING = (
    ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AugAssign,
    ast.AnnAssign, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.If, ast.Try,
)  # fmt: skip


def holds_python(lines: Sequence[str]) -> bool:
    """Whether a directive's content is Python code: it parses, and defines, assigns, imports or
    calls something. Text that parses as Python and does nothing of that is text."""
    code = "\n".join(lines)
    if not code.strip():
        return False
    try:
        with warnings.catch_warnings():  # `"\d"` in an example is a SyntaxWarning, not a reason to stop
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(
        isinstance(s, _DOING) or (isinstance(s, ast.Expr) and isinstance(s.value, (ast.Call, ast.Await)))
        for s in tree.body
    )


def autodoc_left_out(names: Sequence[str]) -> str:
    """The report's line for the autodoc directives of one page (`autoclass click.Group` ...)."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{shown}: autodoc pulls docstrings from the code, which pgcite does not import: left out"
