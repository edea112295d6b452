"""Which language a search reads in each source that has several: the one asked for, else the
question's own where the source has it, else the source's default, so that an answer never mixes
languages. The question's language comes from py3langid's model (bundled in its wheel), limited
to the languages the sources hold."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence

import numpy as np

from pgcite.errors import PgciteError
from pgcite.store import Store
from pgcite.vocabulary import SearchFilter

__all__ = ["checked_tag", "question_language", "resolve_languages"]

# A question leaves its source's default language only when the model gives that language less than
# this probability: on 940 English questions (eval/), none fell below it; a plain question in any
# of Starlight's 16 other languages gives it 0.0.
DEFAULT_IMPROBABLE = 0.01
# Fewer words than this in a Latin script say too little ("import questions csv" reads as French).
MIN_LATIN_WORDS = 4
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ɏ]+")
_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")


@functools.cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_pickled_model(MODEL_FILE)


def _primary(tag: str) -> str:
    return tag.split("-", 1)[0]


def question_language(question: str, languages: Iterable[str], defaults: Iterable[str]) -> str:
    """The language of `languages` the question is written in, or "" when it cannot be told from
    the default ones (`defaults`): short Latin-script questions and names stay in the default."""
    candidates = {_primary(tag): tag for tag in reversed(list(languages))}  # the first tag of each language
    default_primaries = {_primary(tag) for tag in defaults}
    identifier = _identifier()
    known = [i for i, code in enumerate(identifier.nb_classes) if code in candidates]
    if len(known) < 2:
        return ""
    every = np.asarray(identifier.nb_classprobs(identifier.instance2fv(question)))
    if identifier.nb_classes[int(np.argmax(every))] not in candidates:
        return ""  # written in a language no source has (Dutch beside German pages): the default
    scores = every[known]
    probabilities = np.exp(scores - scores.max())
    probabilities /= probabilities.sum()
    codes = [identifier.nb_classes[i] for i in known]
    best = codes[int(np.argmax(probabilities))]
    if best in default_primaries:
        return ""
    latin_words = len(_LATIN_WORD.findall(question))
    non_latin = sum(1 for ch in question if ch.isalpha() and ord(ch) > 0x24F)
    if non_latin < 2 and latin_words < MIN_LATIN_WORDS:
        return ""
    in_default = sum(float(p) for code, p in zip(codes, probabilities, strict=True) if code in default_primaries)
    return candidates[best] if in_default < DEFAULT_IMPROBABLE else ""


def checked_tag(language: str) -> str:
    """A language tag as asked for ("pt_BR" -> "pt-br"); a one-line error when it is not one."""
    tag = language.strip().lower().replace("_", "-")
    if not _TAG.fullmatch(tag):
        raise PgciteError(f"the language {language!r} is not a language tag; use one like en, fr or pt-br")
    return tag


def _match(wanted: str, languages: Sequence[str]) -> str | None:
    """The source's tag for `wanted`: the same tag, else the first of the same language ("pt" -> "pt-br")."""
    if wanted in languages:
        return wanted
    return next((tag for tag in languages if _primary(tag) == _primary(wanted)), None)


def resolve_languages(store: Store, question: str, filters: SearchFilter) -> SearchFilter:
    """`filters` with the language each source with languages is read in (`languages`)."""
    scope = [filters.source] if filters.source else filters.allowed_sources
    wanted = checked_tag(filters.language) if filters.language is not None else ""
    rows = store.source_languages(scope)
    if not rows:
        return filters
    if wanted:  # asked for: a source without it answers nothing
        pairs = [(name, _match(wanted, languages) or wanted) for name, _, languages in rows]
    else:
        several = [(name, default, languages) for name, default, languages in rows if len(languages) > 1]
        if not several:
            return filters
        spoken = question_language(
            question,
            dict.fromkeys(tag for _, _, languages in several for tag in languages),
            {default for _, default, _ in several if default},
        )
        pairs = [
            (name, (_match(spoken, languages) if spoken else None) or default or languages[0])
            for name, default, languages in several
        ]
    return dataclasses.replace(filters, languages=tuple(pairs))
