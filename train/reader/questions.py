"""Questions a section answers, written from the docs by rules (no model): the docs' own questions
(FAQ headings), headings turned into the questions users ask ("Configuring the cache" -> "How do I
configure the cache?"), and the intents the text states ("To disable caching, set ..." -> "How do I
disable caching?"). Each comes with its kind, so the data's mix can be counted."""

from __future__ import annotations

import re

# Headings that name no topic of their own.
GENERIC = set(
    """example examples usage overview introduction intro summary notes note see also related next steps
    conclusion prerequisites requirements setup reference api options parameters arguments returns
    description details background contents index faq faqs troubleshooting tips warning caveats
    getting started quick start quickstart installation install basics advanced more information
    what's next learn more resources further reading""".split()
)
# Verbs that docs put first in a task heading ("Install the CLI", "Installing the CLI").
VERBS = set(
    """add allow build call cancel change check choose clean clear combine compile configure connect
    convert create customize customise debug declare define delete deploy disable display enable
    exclude export extend fetch filter find fix format generate get handle hide import include
    initialize initialise inspect install integrate limit link list load log manage map migrate mock
    monitor move override parse pass pin publish read register reload remove rename render replace
    report request reset restart restore retry return reuse run save schedule scale search secure
    select send serve set share skip sort specify split start stop store stream subscribe switch
    test track transform troubleshoot type update upgrade upload use validate verify view watch
    wrap write""".split()
)


def base_form(gerund: str) -> str | None:
    """'configuring' -> 'configure', 'running' -> 'run', 'adding' -> 'add'; None if unknown."""
    stem = gerund[:-3]
    for candidate in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else ""):
        if candidate in VERBS:
            return candidate
    return None


def _clean(heading: str) -> str:
    heading = re.sub(r"\{#[^}]*\}|<[^>]+>|[*_]{1,2}|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"\s+", " ", heading).strip(" :.-#")


def from_heading(heading: str, title: str) -> list[tuple[str, str]]:
    h = _clean(heading)
    if not h or len(h) > 90 or re.search(r"\d+\.\d+|\b(19|20)\d\d\b", h) or h[0].islower():
        return []  # versions and dates (changelogs), and fragments ("with MkDocs") that need their parent
    if h.endswith("?"):
        return [(h, "faq")]
    words = h.split()
    if len(words) > 7:
        return []  # a sentence, not a topic
    first = words[0].lower()
    rest = " ".join(words[1:])
    if (task := TASKS.get(h.lower())) and title:
        return [(f"How do I {task} {_clean(title)}?", "heading")]
    if h.lower() in GENERIC or (len(words) == 1 and not re.search(r"[`_.\-/]|[a-z][A-Z]", h)):
        # A one-word heading is asked about with its page's subject.
        if title and h.lower() not in GENERIC and title.lower() != h.lower():
            return [(f"What is {h} in {_clean(title)}?", "heading")]
        return []
    if first == "how" and len(words) > 2 and words[1].lower() == "to":
        return [(f"How do I {' '.join(words[2:])}?", "heading")]
    if first.endswith("ing") and (verb := base_form(first)) and rest:
        return [(f"How do I {verb} {_lower_first(rest)}?", "heading")]
    if first in VERBS and rest:
        return [(f"How do I {first} {_lower_first(rest)}?", "heading")]
    if re.search(r"`|^--?\w|\w\.\w|\w_\w|\(\)", h):
        return [(f"What does {h} do?", "heading")]
    # Noun phrases: one of a few askings, chosen by the heading so that each is used about as often.
    template = NOUN_TEMPLATES[sum(map(ord, h)) % len(NOUN_TEMPLATES)]
    return [(template.format(_lower_first(h)), "heading")]


NOUN_TEMPLATES = ("How does {} work?", "What is {} for?", "How do I use {}?", "How do I set up {}?")
# One-word headings that say what is done with the page's subject.
TASKS = {
    "configuration": "configure",
    "usage": "use",
    "installation": "install",
    "install": "install",
    "setup": "set up",
    "deployment": "deploy",
    "testing": "test",
    "upgrading": "upgrade",
}


def _lower_first(text: str) -> str:
    """Lower-case the first word unless it is a name (capitals inside, or all capitals)."""
    first, _, rest = text.partition(" ")
    if first[1:].lower() != first[1:] or first.isupper():
        return text
    return (first[:1].lower() + first[1:] + (" " + rest if rest else "")).strip()


INTENT = re.compile(
    r"(?:^|(?<=[.!?]\s))(?:To|If you want to|If you need to|In order to)\s+([a-z][^,.;:!?]{8,80}),",
)


PRONOUNS = {"it", "this", "that", "them", "these", "those", "so", "one"}


def from_text(text: str) -> list[tuple[str, str]]:
    """'To disable caching, set ...' -> 'How do I disable caching?' (the sentence answers it)."""
    out = []
    for match in INTENT.finditer(text):
        intent = " ".join(match.group(1).split())
        words = intent.split()
        if words[0] in VERBS and "`" not in intent and len(words) >= 3 and words[-1] not in PRONOUNS:
            out.append((f"How do I {intent}?", "intent"))
    return out[:2]


def questions_for(section: dict) -> list[tuple[str, str]]:
    """At most two questions for a section with enough text to answer anything."""
    if len(section["text"]) < 120:
        return []
    crumbs = section["breadcrumb"].split(" > ")
    # A page with no title of its own is named after its file: no subject to ask about.
    title = crumbs[0] if crumbs and crumbs[0].lower() not in ("index", "readme", "_index") else ""
    heading = section["heading_path"][-1] if section["heading_path"] else ""
    asked = from_heading(heading, title) if heading else []
    asked += from_text(section["text"])
    seen, out = set(), []
    for question, kind in asked:
        if question.lower() not in seen:
            seen.add(question.lower())
            out.append((question, kind))
    return out[:2]
