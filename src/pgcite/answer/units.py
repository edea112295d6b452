"""Cutting a passage's Markdown into quotable units for the offline generator (extractive.py):
sentences, list items, table rows with their header, code blocks, and a lead-in with its block."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pgcite.answer.words import STOPWORDS, WORD, content_words, normalise, split_sentences
from pgcite.vocabulary import Passage

MAX_CODE_LINES = 25
MAX_GROUP_ITEMS = 6
MAX_GROUP_WORDS = 120
MIN_SENTENCE_WORDS = 3

_MD = MarkdownIt("commonmark").enable("table")
_BRACKETED_NUMBER = re.compile(r"\[\d+\]")


# --- units -----------------------------------------------------------------------------------


@dataclass
class Atom:
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
class Candidate:
    passage: Passage
    atoms: list[Atom]
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
    tail: list[Atom] = field(default_factory=list)  # taken along when chosen: next lead-in + its block


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


def _atoms(content: str) -> list[Atom]:
    """Cut a passage's Markdown into atoms in document order."""
    tokens = _MD.parse(content)
    atoms: list[Atom] = []
    block = 0
    heading = ""
    position = 0

    def add(kind: str, text: str, embed: str, **extra) -> None:
        nonlocal position
        atoms.append(Atom(kind, text, embed, position, block, heading, **extra))
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
                atoms.append(Atom("item", text, text, slot, block, heading))
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
                    f"{h}: {c}" if h else c
                    for h, c in zip(tuple(header) + ("",) * len(cells), cells, strict=False)
                    if c
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
                sentences = split_sentences(tok.content)
                if sentences:
                    block += 1
                    for n, (sentence, line_break) in enumerate(sentences):
                        words = WORD.findall(sentence)
                        fragment = lead_in(sentence) or _asks(sentence) or len(words) < MIN_SENTENCE_WORDS
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


def reading_units(content: str) -> list[str]:
    """A section's units as the reader reads them, in order: sentences, list items, table rows with
    their header, code."""
    return [a.embed_text for a in _atoms(content) if a.embed_text.strip()]


def passage_candidates(index: int, passage: Passage) -> list[Candidate]:
    hit = passage.hit
    atoms = _atoms(hit.content)
    context = hit.breadcrumb or " > ".join(p for p in (hit.title, hit.heading) if p)
    out: list[Candidate] = []

    def candidate(group: list[Atom]) -> Candidate:
        embed = "\n".join(a.embed_text for a in group)
        heading_words = content_words(f"{context} {group[0].heading}")
        return Candidate(passage, group, embed, content_words(embed), heading_words, (index, group[0].position))

    singles: dict[int, Candidate] = {}
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
        if not (atom.kind == "prose" and lead_in(atom.text)):
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


def _led(atoms: Sequence[Atom], n: int) -> list[Atom]:
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
        steps: list[Atom] = []
        for a in atoms[n + 1 :]:
            if a.block != atom.block or lead_in(a.text):
                break
            steps.append(a)
        if steps and _short(steps):
            return steps
    return []


_FILLER = frozenset(
    "see below above following follows example examples instance here like shown show sample snippet note eg".split()
)


def _bare(text: str) -> bool:
    """A lead-in that says nothing by itself: "See below:", "For example:", "Here is how:"."""
    return not any(w.lower() not in STOPWORDS and w.lower() not in _FILLER for w in WORD.findall(text))


def lead_in(text: str) -> bool:
    return text.rstrip("*_").endswith(":")


def _asks(text: str) -> bool:
    return text.rstrip("*_").endswith("?")


def _short(atoms: Sequence[Atom]) -> bool:
    return len(atoms) <= MAX_GROUP_ITEMS and sum(len(a.text.split()) for a in atoms) <= MAX_GROUP_WORDS
