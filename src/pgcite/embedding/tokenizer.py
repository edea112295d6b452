"""The embedding model's own tokenizer, loaded without truncation or padding, so that chunk budgets
and token counts are counted in the tokens the model actually reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tokenizers

__all__ = ["CountTokens", "Tokenizer", "load_token_counter", "load_tokenizer"]

CountTokens = Callable[[str], int]  # model tokens of a text, without special tokens


_WHITESPACE_SPLITTING = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}


@dataclass(frozen=True)
class Tokenizer:
    """The model's tokenizer, without truncation, padding or special tokens."""

    backend: tokenizers.Tokenizer

    def count(self, text: str) -> int:
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    @property
    def additive(self) -> bool:
        """Whether counts add up over texts joined by whitespace: true of a tokenizer that splits
        words at whitespace before it reads them (WordPiece's BERT pre-tokenizer), so a chunk's
        count is its blocks' sum; not of SentencePiece and byte-level BPE, which read the spaces."""
        return type(self.backend.pre_tokenizer).__name__ in _WHITESPACE_SPLITTING

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character span [start, end) in `text` of each token."""
        return [(a, b) for a, b in self.backend.encode(text, add_special_tokens=False).offsets]


def load_tokenizer(tokenizer_json: Path) -> Tokenizer:
    backend = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    # The model's tokenizer.json truncates and pads to 128: counts would be wrong.
    backend.no_truncation()
    backend.no_padding()
    return Tokenizer(backend)


def load_token_counter(tokenizer_json: Path) -> CountTokens:
    return load_tokenizer(tokenizer_json).count
