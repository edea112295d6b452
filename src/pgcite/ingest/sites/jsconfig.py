"""Values read from a JavaScript or TypeScript site configuration without running it: an object
literal named by its property or its `const`, its top-level entries, and string values (literal
or a `const` holding one). Anything computed (a call, a ternary) reads as unknown, never guessed."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["JsConfig"]

_STRING = re.compile(r"""^(?:'(?P<s>[^'\\\n]*)'|"(?P<d>[^"\\\n]*)"|`(?P<b>[^`\\$]*)`)$""")
_IDENTIFIER = re.compile(r"^[A-Za-z_$][\w$]*$")
_OPEN = {"{": "}", "[": "]", "(": ")"}


def _string_end(text: str, i: int) -> int:
    """The index just past the string literal opening at `i`."""
    quote, end = text[i], i + 1
    while end < len(text) and text[end] != quote:
        end += 2 if text[end] == "\\" else 1
    return end + 1


def _strip_comments(text: str) -> str:
    """`text` without `//` and `/* */` comments (strings kept whole, so a URL's `//` stays)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            end = i + 1
            while end < n and text[end] != ch and not (ch != "`" and text[end] == "\n"):
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append(" ")
            i = n if end < 0 else end + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """The index just past the bracket that closes the one at `start` (len(text) if none)."""
    stack: list[str] = []
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            i = _string_end(text, i)
            continue
        if ch in _OPEN:
            stack.append(_OPEN[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return n


def _split(inner: str) -> list[str]:
    """The comma-separated items of a literal's inside, at its own depth."""
    items, depth, start, i = [], 0, 0, 0
    while i < len(inner):
        ch = inner[i]
        if ch in "'\"`":
            i = _string_end(inner, i)
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
        i += 1
    items.append(inner[start:])
    return [item.strip() for item in items if item.strip()]


def _value(text: str, start: int) -> str:
    """The value starting at `start` of an entry: up to the comma or bracket that ends it."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch in "'\"`":
            i = _string_end(text, i)
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in "}])":
            if depth == 0:
                break
            depth -= 1
        elif ch in ",;" and depth == 0:
            break
        i += 1
    return text[start:i].strip()


def _key_colon(item: str) -> int:
    """Where an object entry's key ends (its `:`), or -1 for a shorthand or spread entry."""
    match = re.match(r"""^(?:[A-Za-z_$][\w$]*|'[^'\n]*'|"[^"\n]*"|\d+)\s*:""", item)
    return match.end() - 1 if match else -1


class JsConfig:
    """A configuration file's text, comments left out, and what can be read from it literally."""

    def __init__(self, text: str) -> None:
        self.text = _strip_comments(text)

    @classmethod
    def first(cls, read: Callable[[str], str], paths: Iterable[str]) -> JsConfig | None:
        """The first of `paths` that `read` can read (OSError: not there), or None."""
        for path in paths:
            try:
                return cls(read(path))
            except OSError:
                continue
        return None

    def object(self, name: str) -> str | None:
        """The first object literal given as property `name` (`name: {...}`), else held by a
        declaration (`const name = {...}`, as a shorthand `name,` property refers to)."""
        key = rf"""(?:{re.escape(name)}|'{re.escape(name)}'|"{re.escape(name)}")"""
        for pattern in (
            rf"(?<![\w$.]){key}\s*:\s*(?=\{{)",
            rf"\b(?:const|let|var)\s+{re.escape(name)}\b[^=;]*=\s*(?=\{{)",
        ):
            for match in re.finditer(pattern, self.text):
                start = match.end()
                return self.text[start : _closing(self.text, start)]
        return None

    def entries(self, literal: str) -> dict[str, str]:
        """The entries of an object literal, key -> its value's source text; a shorthand
        entry (`locales,`) maps to its own name, spreads (`...en`) are left out."""
        found: dict[str, str] = {}
        for item in _split(literal.strip()[1:-1]):
            colon = _key_colon(item)
            if colon >= 0:
                found[item[:colon].strip().strip("'\"")] = item[colon + 1 :].strip()
            elif _IDENTIFIER.match(item):
                found[item] = item
        return found

    def string(self, value: str | None) -> str | None:
        """A string literal's text, or a `const` holding one; None for anything else."""
        if value is None:
            return None
        value = re.sub(r"\s+as\s+const$", "", value.strip())
        match = _STRING.match(value)
        if match:
            return next(group for group in match.groups() if group is not None)
        if _IDENTIFIER.match(value):
            held = re.search(rf"\b(?:const|let|var)\s+{re.escape(value)}\b[^=;]*=\s*([^;\n]+)", self.text)
            if held and _STRING.match(held.group(1).strip().rstrip(",")):
                return self.string(held.group(1).strip().rstrip(","))
        return None

    def strings(self, value: str | None) -> list[str] | None:
        """An array literal of strings (each literal or a `const`); None when any is not one."""
        if value is None or not value.strip().startswith("[") or not value.strip().endswith("]"):
            return None
        items = [self.string(item) for item in _split(value.strip()[1:-1])]
        return None if any(item is None for item in items) else [item for item in items if item is not None]

    def value(self, name: str) -> str | None:
        """The source text of the first property `name` set anywhere (`defaultLocale: 'en'`;
        a shorthand `defaultLocale,` gives the name, which `string` resolves)."""
        match = re.search(rf"(?<![\w$.]){re.escape(name)}\s*(:\s*|(?=\s*[,}}]))", self.text)
        if not match:
            return None
        return _value(self.text, match.end()) if match.group(1) else name

    def top_level(self, name: str) -> str | None:
        """Property `name` of the outermost object literal (the exported configuration), as
        source text: `lang: 'en-US'` beside `locales`, not a `lang` nested inside them."""
        for match in re.finditer(rf"(?<![\w$.]){re.escape(name)}\s*:\s*", self.text):
            if self._depth(match.start()) == 1:
                return _value(self.text, match.end()) or None
        return None

    def _depth(self, index: int) -> int:
        """How many `{` are open at `index`."""
        depth, i = 0, 0
        while i < index:
            ch = self.text[i]
            if ch in "'\"`":
                i = _string_end(self.text, i)
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            i += 1
        return depth
