"""Text from documents is data, never instructions. Two cheap guards:

- at ingest, chunks that read like instructions aimed at an AI assistant are flagged (and left
  out of answers by default);
- in answers, links and e-mail addresses that appear in no fed source are flagged, which is how a
  poisoned page would try to send readers elsewhere."""

from __future__ import annotations

import re
from typing import Iterable

# Each pattern names the kind of injection it catches. Case-insensitive, whitespace-tolerant.
_INJECTION_PATTERNS: dict[str, str] = {
    "ignore previous instructions": r"\b(ignore|disregard|forget|override)\b[\w\s,]{0,30}\b(previous|prior|above|earlier|all|any|your)\b[\w\s]{0,20}\b(instructions?|prompts?|rules|directions|guidelines)\b",
    "addressed to an AI assistant": r"\b(note|message|instructions?|attention)\s+(to|for)\s+(the\s+)?(ai|llm|assistant|language model|chatbot|model)s?\b",
    "role reassignment": r"\byou\s+are\s+now\b|\bact\s+as\s+(an?\s+)?(unrestricted|jailbroken|different)\b|\bnew\s+system\s+prompt\b",
    "hidden prompt markup": r"<\|?(system|im_start|im_end)\|?>|\[/?INST\]|^\s*system\s*:",
    "tells the reader to be sent elsewhere": r"\b(tell|instruct|direct|send|redirect|ask)\s+(the\s+)?(user|reader|customer)s?\s+to\s+(visit|go|contact|e-?mail|click|download|pay|buy|log\s*in|sign\s*in|enter|share|send|call)\b",
    "reveal the prompt": r"\b(reveal|print|repeat|output)\s+(your|the)\s+(system\s+)?(prompt|instructions)\b",
}
_COMPILED = {name: re.compile(p, re.IGNORECASE | re.MULTILINE) for name, p in _INJECTION_PATTERNS.items()}


def injection_flags(text: str) -> list[str]:
    """The kinds of injection-style text found in a chunk (empty when it reads as plain docs)."""
    return [name for name, pattern in _COMPILED.items() if pattern.search(text)]


_LINK = re.compile(r"\bhttps?://[^\s<>()\[\]\"'`]+|\bwww\.[^\s<>()\[\]\"'`]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")


def _normalise_link(link: str) -> str:
    return link.rstrip(".,;:!?").lower().removeprefix("https://").removeprefix("http://").rstrip("/")


def links_and_emails(text: str) -> list[str]:
    found = [m.group(0).rstrip(".,;:!?") for m in _LINK.finditer(text)]
    found += [m.group(0) for m in _EMAIL.finditer(text)]
    return list(dict.fromkeys(found))


def foreign_links(answer: str, sources: Iterable[str]) -> list[str]:
    """Links and e-mail addresses in the answer that no fed source contains."""
    known = {_normalise_link(x) for text in sources for x in links_and_emails(text)}
    return [x for x in links_and_emails(answer) if _normalise_link(x) not in known]
