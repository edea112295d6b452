"""What an answer claims, read without its sources: the units a citation covers (sentences, list
items, table rows), their content words, the names and values they give exactly, and what they say
"not" about. The checks (checks.py) hold each of these against the sections cited."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

# Sources are numbered from 1, so "[0]" (an index in code) is never a citation.
CITATION = re.compile(r"\[([1-9]\d*(?:\s*,\s*[1-9]\d*)*)\]")


def cited_numbers(text: str) -> list[int]:
    """The source numbers the text cites, in the order it cites them ("[2, 3]" is 2 then 3)."""
    return [int(n) for m in CITATION.finditer(text) for n in re.split(r"\s*,\s*", m.group(1))]


_STOPWORDS = frozenset(
    (
        "a an and are as at be been but by can do does for from has have how i if in into is it its of on or so such "
        "than that the their then there these they this to was were what when where which while who will with you your "
        "not no yes should would could may might must also only just more most very"
    ).split()
)
_MD = MarkdownIt("commonmark").enable("table")
# A sentence ends at . ! or ? before a capital, quote or code span; a citation written after the
# full stop ("... done. [2]") stays with its sentence.
SENTENCE_END = re.compile(r"(?<=[.!?\]])\s+(?=[A-Z`\"(])")
_PIPE_ROW = re.compile(r"^\s*\|(.+?)\|?\s*$")

# What a claim names exactly: a code span, a short quotation, a number or version, an identifier
# (with digits as h4 or v2, camelCase, snake_case, dotted, called()).
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{1,60})[\"”]")
_NAMED = re.compile(r"(?<![\w.])(?:\d[\w.]*|[A-Za-z]+\d\w*|\w+[._]\w[\w.]*|[a-z]+[A-Z]\w*|\w+\(\))(?![\w(])")
_NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
# A "not" covers the few words after it (code and symbols aside): "you can't use `$$` as delimiters".
NEGATION_REACH = 6
# "Yes," or "No:" opening a claim answers the question; it does not say "not" about the words after it.
_VERDICT = re.compile(r"^\W*(?:yes|no)\W*?[,:;.!\u2014\u2013-]\W*", re.IGNORECASE)  # not "No migration is needed"
NEGATION = re.compile(r"\b(?:not|no|never|cannot|none|nothing|neither|nor)\b|n't\b", re.IGNORECASE)


def content_words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z0-9_]+", text.lower()) if w not in _STOPWORDS and len(w) > 1}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def split_claims(answer: str) -> list[str]:
    """The units a citation covers, outside code: each sentence of a paragraph (wrapped lines
    joined), each list item and each table body row whole (cells joined by " | "; the header
    names columns, it claims nothing). Headings claim nothing either. A citation at the end of
    an item or row is the one its writer gave it."""
    tokens = _MD.parse(answer)
    claims: list[str] = []
    items: list[tuple[int, list[str]]] = []  # open list items: (place in claims, own paragraphs)
    row: list[str] | None = None
    in_head = False
    for i, tok in enumerate(tokens):
        if tok.type == "list_item_open":
            items.append((len(claims), []))
        elif tok.type == "list_item_close":
            place, paragraphs = items.pop()
            if text := _one_line(" ".join(paragraphs)):
                claims.insert(place, text)  # before its nested items, as it is written
        elif tok.type in ("thead_open", "thead_close"):
            in_head = tok.type == "thead_open"
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            if not in_head and any(row):
                claims.append(" | ".join(cell for cell in row if cell))
            row = None
        elif tok.type == "inline":
            kind = tokens[i - 1].type if i else ""
            if row is not None:
                row.append(_one_line(tok.content))
            elif kind == "heading_open":
                continue
            elif items and kind == "paragraph_open":
                items[-1][1].append(tok.content)
            else:
                claims += _sentences(tok.content)
    return claims


def code_blocks(answer: str) -> list[str]:
    return [tok.content for tok in _MD.parse(answer) if tok.type in ("fence", "code_block") and tok.content.strip()]


def _sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences; a line that is a table row left unparsed (no header) is one."""
    claims: list[str] = []
    lines: list[str] = []

    def flush() -> None:
        claims.extend(SENTENCE_END.split(_one_line(" ".join(lines))))
        lines.clear()

    for line in paragraph.split("\n"):
        if row := _PIPE_ROW.match(line):
            flush()
            claims.append(" | ".join(cell.strip() for cell in row.group(1).split("|") if cell.strip()))
        else:
            lines.append(line)
    flush()
    return [claim for claim in claims if claim]


def is_claim(sentence: str) -> bool:
    """Worth a citation: not a lead-in ("Here is how:"), a bare citation, or a short fragment."""
    words = [w for w in CITATION.sub("", sentence).split() if w != "|"]
    return len(words) >= 4 and not sentence.rstrip().endswith(":")


def without_lead_in(unit: str) -> str:
    """A list item's claim without the lead-in it ends with ("Install it. Run this command:"); a
    unit that is only a lead-in is left whole (is_claim passes over it)."""
    parts = SENTENCE_END.split(unit)
    if len(parts) > 1 and parts[-1].rstrip().endswith(":"):
        return " ".join(parts[:-1])
    return unit


def folded(text: str) -> str:
    return " ".join(text.lower().split())


def exact_terms(claim: str) -> set[str]:
    """The names and values a claim gives exactly (folded): its code spans, short quotations,
    numbers and identifiers ("e.g." is none)."""
    spans = _CODE_SPAN.findall(claim)
    rest = _CODE_SPAN.sub(" ", claim)
    quoted = [q for q in _QUOTED.findall(rest) if len(q.split()) <= 6]
    rest = _QUOTED.sub(" ", rest)
    named = [t.rstrip(".") for t in _NAMED.findall(rest)]
    terms = spans + quoted + [t for t in named if not re.fullmatch(r"[a-z](?:\.[a-z])+", t, re.IGNORECASE)]
    return {folded(t) for t in terms if folded(t)}


def term_in(term: str, text: str) -> bool:
    """Whether a folded text holds a term, whole ("1" is not in "v1", "h4" not in "h44"); a small
    number also as its word ("5" in "five seconds")."""
    if re.search(rf"(?<!\w){re.escape(term)}(?!\w)" if re.fullmatch(r"\w(.*\w)?", term) else re.escape(term), text):
        return True
    return (
        term.isdigit() and int(term) < len(_NUMBER_WORDS) and bool(re.search(rf"\b{_NUMBER_WORDS[int(term)]}\b", text))
    )


def says_not(text: str) -> bool:
    return bool(NEGATION.search(_VERDICT.sub("", text)))


def negated_words(sentence: str) -> set[str]:
    """The content words a sentence says "not" about: those among the few words after each "not"."""
    out: set[str] = set()
    sentence = _VERDICT.sub("", sentence)
    for match in NEGATION.finditer(sentence):
        out |= content_words(" ".join(re.findall(r"[a-z0-9_]+", sentence[match.end() :].lower())[:NEGATION_REACH]))
    return out
