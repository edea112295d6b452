"""Words of the passages and of the question as the offline generator matches them: content-word
stems (camelCase identifiers split), the normalisation of quoted Markdown, and sentence splitting."""

from __future__ import annotations

import re

# --- words ---------------------------------------------------------------------------------

STOPWORDS = frozenset(
    (
        "a about above after again against all am an and any are as at be because been before being below between both "
        "but by can could did do does doing done down during each either else few for from further get gets got had "
        "has have having he her here hers herself him himself his how i if in into is it its itself just let lets me "
        "might more most must my myself no nor not now of off on once only or other our ours ourselves out over own "
        "please same shall she should so some such than that the their theirs them themselves then there these they "
        "this those through to too under until up upon us very via was way we were what when where whether which while "
        "who whom whose why will with within without would yes yet you your yours yourself yourselves also may one ll "
        "re ve s t d m"
    ).split()
)

WORD = re.compile(r"[A-Za-z0-9]+")
CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SUFFIXES = (
    ("ations", ""),
    ("ation", ""),
    ("ings", ""),
    ("ing", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ers", ""),
    ("er", ""),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
    ("ly", ""),
    ("e", ""),
)


def _stem(word: str) -> str:
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: -len(suffix)] + replacement
    return word


def content_words(text: str) -> frozenset[str]:
    """Stems of the content words of `text` (camelCase identifiers also give their parts)."""
    out: set[str] = set()
    for raw in WORD.findall(text):
        parts = [raw]
        pieces = CAMEL.findall(raw)
        if len(pieces) > 1:
            parts.extend(pieces)
        for part in parts:
            word = part.lower()
            if word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
                continue
            out.add(_stem(word))
    return frozenset(out)


# --- inline normalisation --------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")
_IMAGE = re.compile(r"!\[(?:[^\[\]]|\[[^\[\]]*\])*\]\((?:[^()\s]|\([^()]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\((?:[^()\s]|\([^()]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REF_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\[[^\[\]]*\]")
_SPACE = re.compile(r"\s+")


def _outside_code(text: str, edit) -> str:
    """Apply `edit` to the parts of `text` that are not inline code spans."""
    out: list[str] = []
    pos = 0
    for match in _CODE_SPAN.finditer(text):
        out.append(edit(text[pos : match.start()]))
        out.append(match.group(0))
        pos = match.end()
    out.append(edit(text[pos:]))
    return "".join(out)


def _strip_links(text: str) -> str:
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    return _REF_LINK.sub(r"\1", text)


def normalise(text: str) -> str:
    """The normalisation applied to quoted prose, list items and cells: links reduced to their
    text, images removed (outside inline code), whitespace runs collapsed to one space."""
    return _SPACE.sub(" ", _outside_code(text, _strip_links)).strip()


# --- sentences -------------------------------------------------------------------------------

_ABBREVIATIONS = frozenset("e.g i.e etc vs cf approx incl esp al fig no nos mr mrs ms dr st vol ex eg ie resp".split())
_BOUNDARY = re.compile(r"(?:[.!?][\"')\]*_]*|:[\"')\]*_]*(?=[ \t]*\n))\s+")
_STARTS_SENTENCE = re.compile(r"[\"'(\[*_`]*[A-Z0-9]")


def _mask_code(text: str) -> str:
    """Same-length copy of `text` with inline code spans blanked, so their dots never split."""
    return _CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), text)


def split_sentences(text: str) -> list[tuple[str, bool]]:
    """Sentences of a paragraph's inline source, normalised, each with whether a line break
    followed it in the source (a lead-in "To add a case:" then one step per line)."""
    masked = _mask_code(text)
    out: list[tuple[str, bool]] = []
    start = 0
    for match in _BOUNDARY.finditer(masked):
        end = match.end()
        if not _STARTS_SENTENCE.match(masked, end):
            continue
        head = masked[start : match.start() + 1]
        last = re.search(r"([A-Za-z.]+)[.!?:]?$", head.rstrip("\"')]*_"))
        if masked[match.start()] == "." and last and last.group(1).lower().rstrip(".") in _ABBREVIATIONS:
            continue
        if masked[match.start()] == "." and re.search(r"(?:^|\s)[A-Z]\.$", head):
            continue  # an initial: "J. Smith"
        out.append((text[start:end], "\n" in match.group(0)))
        start = end
    out.append((text[start:], False))
    return [(n, brk) for n, brk in ((normalise(s), brk) for s, brk in out) if n]
