"""The embedded offline generator: answers by quoting the passages' own units, each cited.

`ExtractiveGenerator` cuts the fed passages into *units* (prose sentences, list items, table rows
written back with their header, whole fenced code blocks, and a lead-in with the short block it
introduces), scores each against the question, and writes the best few with ` [n]` after each. It
never writes a word that is not in a cited passage, so it cannot invent, nor synthesise.

A unit's relevance is 0.6 x its cosine with the question + 0.4 x the IDF-weighted share of the
question's words it holds + up to 0.08 for those words in its headings, less a penalty when most
of its words are the question's own (a unit that only restates or quotes the question is never
chosen). A prior for the passage's rank (0.16 for [1], falling to 0 at [6]) orders the units but
does not make one relevant. The answer is exactly `Not in the documents.` when no unit's
relevance reaches `min_score`, or the passages hold too little of the question's word weight
(`min_coverage`). Otherwise up to `max_units` units within MARGIN of the best are written, the
best unit's passage first, document order within a passage; a chosen sentence brings along the
lead-in and block after it, and a paragraph's last sentence the code block right after it.

How the numbers were chosen, and what they measure on every question set: docs/answering.md.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pgcite.embedding.models import Embedder
from pgcite.vocabulary import REFUSAL, Passage, Usage

__all__ = ["DEFAULT_MIN_COVERAGE", "DEFAULT_MIN_SCORE", "ExtractiveGenerator", "ScoredUnit", "normalise"]

DEFAULT_MIN_SCORE = 0.25
DEFAULT_MIN_COVERAGE = 0.08

W_COSINE = 0.6
W_OVERLAP = 0.4
W_HEADING = 0.08
W_RANK = 0.16
W_ACTION = 0.1  # for a how-question, a unit holding code (a command, setting, call) gains this
MARGIN = 0.7  # units within this fraction of the best are candidates
ECHO = 0.5  # a unit with less than this share of words the question lacks is docked for echoing it
W_ECHO = 0.3
MIN_NOVELTY = 0.25  # below this, a unit only restates the question (or quotes it) and never answers
DUPLICATE = 0.8  # containment of content words above which a unit repeats a chosen one
MAX_CODE_LINES = 25
MAX_GROUP_ITEMS = 6
MAX_GROUP_WORDS = 120
MIN_SENTENCE_WORDS = 3
LONG_UNIT = 40  # words per atom above which word overlap is discounted (by sqrt(LONG_UNIT / words))
EMBED_CHARS = 600  # a unit's text is cut to about this many characters (~150 tokens) for embedding

_MD = MarkdownIt("commonmark").enable("table")

# --- words ---------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either", "else", "few", "for", "from", "further", "get", "gets", "got", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "lets", "me", "might", "more", "most", "must", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "please", "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "upon", "us", "very", "via", "was", "way", "we", "were", "what", "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with", "within", "without", "would", "yes", "yet", "you", "your", "yours", "yourself", "yourselves", "also", "may", "one", "ll", "re", "ve", "s", "t", "d", "m"]
)

_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
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


def _content_words(text: str) -> frozenset[str]:
    """Stems of the content words of `text` (camelCase identifiers also give their parts)."""
    out: set[str] = set()
    for raw in _WORD.findall(text):
        parts = [raw]
        pieces = _CAMEL.findall(raw)
        if len(pieces) > 1:
            parts.extend(pieces)
        for part in parts:
            word = part.lower()
            if word in _STOPWORDS or (len(word) < 2 and not word.isdigit()):
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

_ABBREVIATIONS = frozenset(["e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "esp", "al", "fig", "no", "nos", "mr", "mrs", "ms", "dr", "st", "vol", "ex", "eg", "ie", "resp"])
_BOUNDARY = re.compile(r"(?:[.!?][\"')\]*_]*|:[\"')\]*_]*(?=[ \t]*\n))\s+")
_BRACKETED_NUMBER = re.compile(r"\[\d+\]")
_STARTS_SENTENCE = re.compile(r"[\"'(\[*_`]*[A-Z0-9]")


def _mask_code(text: str) -> str:
    """Same-length copy of `text` with inline code spans blanked, so their dots never split."""
    return _CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), text)


def _split_sentences(text: str) -> list[tuple[str, bool]]:
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


# --- units -----------------------------------------------------------------------------------


@dataclass
class _Atom:
    """The smallest quotable piece: a sentence, a list item, a table row or a code block."""

    kind: str  # "prose" | "item" | "row" | "code"
    text: str  # written form without the citation (row: cells joined by " | ")
    embed_text: str  # what is embedded and matched
    position: int  # order within the passage
    block: int  # id of the block (paragraph, list, table, code) it belongs to
    heading: str  # heading inside the passage above it, "" if none
    cells: tuple[str, ...] = ()
    header: tuple[str, ...] = ()  # rows: the table's header cells
    aligns: tuple[str, ...] = ()  # rows: the delimiter row's cells
    fragment: bool = False
    last_in_block: bool = False
    line_break: bool = False  # prose: a line break follows it in the source
    cites: bool = False  # holds a bracketed number outside code, like a citation


@dataclass
class _Candidate:
    passage: Passage
    atoms: list[_Atom]
    embed_text: str
    words: frozenset[str]
    heading_words: frozenset[str]
    order: tuple[int, int]  # passage index, first atom position
    score: float = 0.0  # relevance + the rank prior: what units are ordered by
    relevance: float = 0.0  # what the bar min_score applies to
    cosine: float = 0.0
    overlap: float = 0.0
    heading: float = 0.0
    novelty: float = 1.0  # share of its content words that the question does not have
    tail: list[_Atom] = field(default_factory=list)  # taken along when chosen: next lead-in + its block


@dataclass(frozen=True)
class ScoredUnit:
    """A candidate unit with its score parts, for calibration and inspection."""

    passage: int  # the passage number it would be cited as
    kind: str  # "prose" | "item" | "row" | "code" | "group"
    text: str
    score: float
    relevance: float
    cosine: float
    overlap: float
    heading: float


def _cell_text(text: str) -> str:
    return normalise(text).replace("|", "\\|")


def _align(token: Token) -> str:
    style = str(token.attrGet("style") or "")
    if "center" in style:
        return ":---:"
    if "right" in style:
        return "---:"
    if "left" in style:
        return ":---"
    return "---"


def _atoms(content: str) -> list[_Atom]:
    """Cut a passage's Markdown into atoms in document order."""
    tokens = _MD.parse(content)
    atoms: list[_Atom] = []
    block = 0
    heading = ""
    position = 0

    def add(kind: str, text: str, embed: str, **extra) -> None:
        nonlocal position
        atoms.append(_Atom(kind, text, embed, position, block, heading, **extra))
        position += 1

    # list items: a stack of [paragraph texts]; the item is emitted when it closes, at its
    # opening position (so a parent precedes its nested items)
    items: list[tuple[int, list[str]]] = []
    list_depth = 0
    in_table = False
    header: list[str] = []
    aligns: list[str] = []
    row: list[str] = []
    in_head = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        kind = tok.type
        if kind == "heading_open":
            heading = normalise(tokens[i + 1].content) if i + 1 < len(tokens) else ""
            i += 3
            continue
        if kind in ("bullet_list_open", "ordered_list_open"):
            if list_depth == 0:
                block += 1
            list_depth += 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            list_depth -= 1
            if list_depth == 0:
                block += 1
        elif kind == "list_item_open":
            items.append((position, []))
            position += 1  # reserve the item's slot before its nested content
        elif kind == "list_item_close":
            slot, texts = items.pop()
            text = normalise(" ".join(texts))
            if text:
                atoms.append(_Atom("item", text, text, slot, block, heading))
        elif kind == "table_open":
            block += 1
            in_table, header, aligns = True, [], []
        elif kind == "table_close":
            in_table = False
            block += 1
        elif kind == "thead_open":
            in_head = True
        elif kind == "thead_close":
            in_head = False
        elif kind == "tr_open":
            row = []
        elif kind in ("th_open",):
            aligns.append(_align(tok))
        elif kind == "tr_close" and in_table:
            if in_head:
                header = row
            elif any(row):
                cells = tuple(row) + ("",) * max(0, len(header) - len(row))
                embed = "; ".join(
                    f"{h}: {c}" if h else c for h, c in zip(tuple(header) + ("",) * len(cells), cells) if c
                )
                add(
                    "row",
                    " | ".join(cells),
                    embed.replace("\\|", "|"),
                    cells=cells,
                    header=tuple(header),
                    aligns=tuple(aligns),
                )
        elif kind == "inline":
            if in_table:
                row.append(_cell_text(tok.content))
            elif items:
                items[-1][1].append(tok.content)
            else:
                sentences = _split_sentences(tok.content)
                if sentences:
                    block += 1
                    for n, (sentence, line_break) in enumerate(sentences):
                        words = _WORD.findall(sentence)
                        fragment = _lead_in(sentence) or _asks(sentence) or len(words) < MIN_SENTENCE_WORDS
                        add(
                            "prose",
                            sentence,
                            sentence,
                            fragment=fragment,
                            last_in_block=n == len(sentences) - 1,
                            line_break=line_break,
                        )
        elif kind in ("fence", "code_block"):
            code = tok.content.rstrip("\n")
            if code.strip():
                fence = tok.markup if kind == "fence" else "```"
                info = tok.info.strip() if kind == "fence" else ""
                if list_depth == 0:
                    block += 1
                lines = code.split("\n")
                add("code", f"{fence}{info}\n{code}\n{fence}", code, fragment=len(lines) > MAX_CODE_LINES)
                if list_depth == 0:
                    block += 1
        i += 1
    atoms.sort(key=lambda a: a.position)
    for atom in atoms:
        # the source's own "[2]" (a footnote marker, `args[2]`) would read as a citation: never
        # quote it outside code blocks, whose citation is the line after the fence
        atom.cites = atom.kind != "code" and _BRACKETED_NUMBER.search(atom.text) is not None
    return atoms


def _candidates(index: int, passage: Passage) -> list[_Candidate]:
    hit = passage.hit
    atoms = _atoms(hit.content)
    context = hit.breadcrumb or " > ".join(p for p in (hit.title, hit.heading) if p)
    out: list[_Candidate] = []

    def candidate(group: list[_Atom]) -> _Candidate:
        embed = "\n".join(a.embed_text for a in group)
        heading_words = _content_words(f"{context} {group[0].heading}")
        return _Candidate(passage, group, embed, _content_words(embed), heading_words, (index, group[0].position))

    singles: dict[int, _Candidate] = {}
    for n, atom in enumerate(atoms):
        if not atom.fragment:
            singles[n] = candidate([atom])
            out.append(singles[n])
        if atom.kind == "prose" and _asks(atom.text):
            # a question in the text ("Is there a size limit?") comes with the sentence answering it
            answer = atoms[n + 1] if n + 1 < len(atoms) else None
            if answer is not None and answer.kind == "prose" and not answer.fragment and answer.block - atom.block <= 1:
                out.append(candidate([atom, answer]))
            continue
        if not (atom.kind == "prose" and _lead_in(atom.text)):
            if n in singles and atom.kind == "prose" and atom.last_in_block:
                # "Run this command on your site." + the command: the code right after a paragraph
                # comes along with the paragraph's last sentence
                following = [a for a in atoms[n + 1 :] if a.block == atom.block + 1]
                if len(following) == 1 and following[0].kind == "code" and not following[0].fragment:
                    singles[n].tail = following
            continue
        led = _led(atoms, n)
        if not led:
            continue
        previous = n - 1 if n > 0 and atoms[n - 1].block == atom.block and (n - 1) in singles else None
        if previous is not None:
            # the sentence just before a lead-in brings the lead-in and its block along when chosen
            singles[previous].tail = [atom, *led]
        if _bare(atom.text) and previous is not None:
            # "... back it up with the standard tools. See below:" + code: scored as one unit
            out.append(candidate([atoms[previous], atom, *led]))
        else:
            out.append(candidate([atom, *led]))
    for c in out:
        if any(a.cites for a in c.tail):
            c.tail = []
    return [c for c in out if not any(a.cites for a in c.atoms)]


def _led(atoms: Sequence[_Atom], n: int) -> list[_Atom]:
    """The short list, code block or run of one-line steps that the lead-in atoms[n] introduces."""
    atom = atoms[n]
    if atom.last_in_block:
        following = [a for a in atoms[n + 1 :] if a.block == atom.block + 1]
        if following and all(a.kind == "item" for a in following) and _short(following):
            return following
        if len(following) == 1 and following[0].kind == "code" and not following[0].fragment:
            return following
        return []
    if atom.line_break:
        steps: list[_Atom] = []
        for a in atoms[n + 1 :]:
            if a.block != atom.block or _lead_in(a.text):
                break
            steps.append(a)
        if steps and _short(steps):
            return steps
    return []


_FILLER = frozenset(
    ["see", "below", "above", "following", "follows", "example", "examples", "instance", "here", "like", "shown", "show", "sample", "snippet", "note", "eg"]
)


def _bare(text: str) -> bool:
    """A lead-in that says nothing by itself: "See below:", "For example:", "Here is how:"."""
    return not any(w.lower() not in _STOPWORDS and w.lower() not in _FILLER for w in _WORD.findall(text))


def _lead_in(text: str) -> bool:
    return text.rstrip("*_").endswith(":")


def _asks(text: str) -> bool:
    return text.rstrip("*_").endswith("?")


def _short(atoms: Sequence[_Atom]) -> bool:
    return len(atoms) <= MAX_GROUP_ITEMS and sum(len(a.text.split()) for a in atoms) <= MAX_GROUP_WORDS


# --- writing ---------------------------------------------------------------------------------


def _table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _render(chosen: list[tuple[Passage, _Atom]]) -> Iterator[str]:
    """Yield the answer piece by piece (separator included in the piece that follows it)."""
    previous: tuple[Passage, _Atom] | None = None
    for passage, atom in chosen:
        cite = f"[{passage.number}]"
        same_passage = previous is not None and previous[0] is passage
        prev = previous[1] if previous is not None else None
        if previous is None:
            sep = ""
        elif same_passage and prev is not None and prev.kind == atom.kind == "prose":
            sep = " "
        elif (same_passage and prev is not None and prev.kind == atom.kind == "item") or (same_passage and prev is not None and prev.kind == atom.kind == "row" and prev.block == atom.block):
            sep = "\n"
        elif same_passage and prev is not None and prev.kind == "prose" and _lead_in(prev.text) and atom.kind == "item":
            sep = "\n"  # a lead-in sits right above its list
        else:
            sep = "\n\n"
        if atom.kind == "prose":
            text = f"{atom.text} {cite}"
        elif atom.kind == "item":
            text = f"- {atom.text} {cite}"
        elif atom.kind == "row":
            width = max(len(atom.header), len(atom.cells))
            cells = list(atom.cells) + [""] * (width - len(atom.cells))
            cells[-1] = f"{cells[-1]} {cite}".strip()
            text = _table_row(cells)
            if sep != "\n":  # first row of this table in the answer: header first
                header = list(atom.header) + [""] * (width - len(atom.header))
                aligns = list(atom.aligns) + ["---"] * (width - len(atom.aligns))
                text = f"{_table_row(header)}\n{_table_row(aligns)}\n{text}"
        else:
            text = f"{atom.text}\n{cite}"
        yield sep + text
        previous = (passage, atom)


# --- the generator ---------------------------------------------------------------------------


class ExtractiveGenerator:
    """Answers with the passages' own best sentences, items, rows and code blocks, each cited."""

    name = "extractive"
    judges_relevance = False  # it quotes; whether to refuse is decided from scores (answer.py, refuse())

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_units: int = 5,
        min_score: float = DEFAULT_MIN_SCORE,
        min_coverage: float = DEFAULT_MIN_COVERAGE,
    ) -> None:
        if max_units < 1:
            raise ValueError("max_units must be at least 1")
        self.embedder = embedder
        self.rescale: Callable[[float], float] = lambda cosine: cosine
        self.max_units = max_units
        self.min_score = min_score
        self.min_coverage = min_coverage

    def calibrated(self, rescale: Callable[[float], float]) -> ExtractiveGenerator:
        """A copy that reads its model's cosines on the bundled model's scale (calibration.py):
        the weights and bars below were set on the bundled model's cosines."""
        twin = copy.copy(self)
        twin.rescale = rescale
        return twin

    # scoring ------------------------------------------------------------------------------

    def _score(self, question: str, passages: Sequence[Passage]) -> tuple[list[_Candidate], float]:
        """The candidates, best first, and the question's coverage by the passages (see _select)."""
        ordered = sorted(passages, key=lambda p: p.number)
        candidates = [c for i, p in enumerate(ordered) for c in _candidates(i, p)]
        if not candidates or not question.strip():
            return [], 0.0
        # IDF over the atoms of the fed passages (each atom counted once)
        atom_words: dict[int, frozenset[str]] = {}
        for c in candidates:
            for a in c.atoms:
                atom_words.setdefault(id(a), _content_words(a.embed_text))
        total = len(atom_words)
        df: dict[str, int] = {}
        for words in atom_words.values():
            for w in words:
                df[w] = df.get(w, 0) + 1
        q_words = _content_words(question)
        how = asks_how(question)
        idf = {w: math.log((total + 1) / (df.get(w, 0) + 0.5)) for w in q_words}
        q_weight = sum(idf.values())
        found = set().union(*atom_words.values(), *(c.heading_words for c in candidates))
        coverage = sum(idf[w] for w in q_words & found) / q_weight if q_weight > 0 else 1.0

        # Every atom is embedded once, in one call; a unit of several atoms (a lead-in and its
        # list) gets the length-weighted mean of its atoms' vectors, which is what the model's
        # mean pooling would give, less the attention across the parts.
        texts = sorted({_for_embedding(a.embed_text) for c in candidates for a in c.atoms})
        vectors = np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)
        row_of = {t: n for n, t in enumerate(texts)}
        query = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
        for c in candidates:
            rows = [row_of[_for_embedding(a.embed_text)] for a in c.atoms]
            if len(rows) == 1:
                vector = vectors[rows[0]]
            else:
                weights = np.array([len(_for_embedding(a.embed_text)) for a in c.atoms], dtype=np.float32)
                vector = weights @ vectors[rows]
                vector = vector / (np.linalg.norm(vector) or 1.0)
            c.cosine = self.rescale(float(vector @ query))
            c.overlap = sum(idf[w] for w in q_words & c.words) / q_weight if q_weight > 0 else 0.0
            per_atom = len(_WORD.findall(c.embed_text)) / len(c.atoms)
            if per_atom > LONG_UNIT:
                c.overlap *= math.sqrt(LONG_UNIT / per_atom)
            c.heading = sum(idf[w] for w in q_words & c.heading_words) / q_weight if q_weight > 0 else 0.0
            rank = max(0.0, 1.0 - 0.2 * (c.passage.number - 1))
            c.novelty = _novelty(c, q_words, atom_words)
            c.relevance = (
                W_COSINE * c.cosine
                + W_OVERLAP * c.overlap
                + W_HEADING * c.heading
                - W_ECHO * max(0.0, ECHO - c.novelty)
            )
            c.score = c.relevance + W_RANK * rank + (W_ACTION if how and _holds_action(c) else 0.0)
        candidates = [c for c in candidates if c.novelty >= MIN_NOVELTY]
        candidates.sort(key=lambda c: (-round(c.score, 6), c.order))
        return candidates, coverage

    def rank(self, question: str, passages: Sequence[Passage]) -> list[ScoredUnit]:
        """Every candidate unit, best first, with its score parts (for calibration)."""
        return [
            ScoredUnit(
                c.passage.number,
                "group" if len(c.atoms) > 1 else c.atoms[0].kind,
                "\n".join(a.text for a in c.atoms),
                c.score,
                c.relevance,
                c.cosine,
                c.overlap,
                c.heading,
            )
            for c in self._score(question, passages)[0]
        ]

    def _select(self, question: str, passages: Sequence[Passage]) -> list[tuple[Passage, _Atom]]:
        candidates, coverage = self._score(question, passages)
        # A question about something the passages never name ("Does pgcite support Elasticsearch?")
        # scores like an answerable one: the product's name and topic are all over the passages.
        # Its coverage tells them apart: that name, on many units, weighs little there; the words
        # naming what is asked, on none, weigh most.
        # The bar is on relevance alone: the rank prior orders units, it does not make one relevant.
        if not candidates or max(c.relevance for c in candidates) < self.min_score or coverage < self.min_coverage:
            return []
        floor = MARGIN * candidates[0].score
        chosen: list[_Candidate] = []
        used: set[int] = set()
        taken: dict[int, list[_Atom]] = {}
        for c in candidates:
            if len(chosen) >= self.max_units or c.score < floor:
                break
            if (
                c.relevance < self.min_score
                or any(id(a) in used for a in c.atoms)
                or any(_duplicate(c, d) for d in chosen)
            ):
                continue
            chosen.append(c)
            used.update(id(a) for a in c.atoms)
            if c.tail and not any(id(a) in used for a in c.tail):
                taken[id(c)] = c.tail
                used.update(id(a) for a in c.tail)
        # The passage of the best unit is written first, then the others as they were ranked;
        # within a passage, units keep the document's order.
        # For a how-question the unit holding the action leads, with its passage.
        if asks_how(question) and (action := next((c for c in chosen if _holds_action(c)), None)):
            chosen.remove(action)
            chosen.insert(0, action)
        first_choice: dict[int, int] = {}
        for n, c in enumerate(chosen):
            first_choice.setdefault(c.order[0], n)
        pairs = [(c.passage, a, first_choice[c.order[0]]) for c in chosen for a in [*c.atoms, *taken.get(id(c), [])]]
        pairs.sort(key=lambda t: (t[2], t[1].position))
        return [(p, a) for p, a, _ in pairs]

    def stream(self, question: str, passages: Sequence[Passage], usage: Usage) -> Iterator[str]:
        chosen = self._select(question, passages)
        if not chosen:
            yield REFUSAL
            return
        yield from _render(chosen)

    def answer(self, question: str, passages: Sequence[Passage]) -> str:
        return "".join(self.stream(question, passages, Usage()))


# A question asking how to do something, or which command, option or setting does it: its answer is
# the unit holding the action, not the page's introduction of what the feature is for.
_NAMED_THING = r"(?:command|option|setting|flag|parameter|argument|method|function|class|attribute|property|field|key|variable|config\w*)s?"
_HOW = re.compile(rf"\bhow (?:do|does|can|could|should|would|to|is)\b|\b(?:which|what) {_NAMED_THING}\b", re.IGNORECASE)


def asks_how(question: str) -> bool:
    return _HOW.search(question) is not None


def _holds_action(c: _Candidate) -> bool:
    return any(a.kind == "code" or "`" in a.text for a in c.atoms)


_IDENTIFIER = re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")


def _for_embedding(text: str) -> str:
    # the model reads `respectPrefersColorScheme` as word pieces: spell identifiers out as words
    text = _IDENTIFIER.sub(lambda m: " ".join(p.lower() for p in _CAMEL.findall(m.group(0))), text)
    if len(text) <= EMBED_CHARS:
        return text
    cut = text.rfind(" ", 0, EMBED_CHARS)
    return text[: cut if cut > EMBED_CHARS // 2 else EMBED_CHARS]


def _novelty(c: _Candidate, question_words: frozenset[str], atom_words: dict[int, frozenset[str]]) -> float:
    """The share of content words the question lacks, in the unit's least novel atom of three
    words or more (a lead-in then a code example of the question itself restates it)."""
    shares = [
        len(words - question_words) / len(words) for words in (atom_words[id(a)] for a in c.atoms) if len(words) >= 3
    ]
    if not shares:
        return len(c.words - question_words) / len(c.words) if c.words else 0.0
    return min(shares)


def _duplicate(a: _Candidate, b: _Candidate) -> bool:
    if a.embed_text == b.embed_text:
        return True
    small = min(len(a.words), len(b.words))
    if small < 3:
        return False
    return len(a.words & b.words) / small >= DUPLICATE
