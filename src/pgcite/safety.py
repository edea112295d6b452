"""Text from documents is data, never instructions. Cheap guards:

- at ingest, chunks that read like instructions aimed at an AI assistant, or that send readers to
  another site for credentials, payment or a download, are flagged (and left out of answers by
  default);
- in answers, links and e-mail addresses that appear in no fed source are flagged, and so are
  those on a site other than the docs' own (their base URLs and the operator's allowed hosts):
  that is how a poisoned page would try to send readers elsewhere."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

# Each pattern names the kind of injection it catches. Case-insensitive, whitespace-tolerant.
_INJECTION_PATTERNS: dict[str, str] = {
    "ignore previous instructions": r"\b(ignore|disregard|forget|override)\b[\w\s,]{0,30}"
    r"\b(previous|prior|above|earlier|all|any|your)\b[\w\s]{0,20}\b(instructions?|prompts?|rules|directions|guidelines)\b",
    "addressed to an AI assistant": r"\b(note|message|instructions?|attention)\s+(to|for)\s+(the\s+)?"
    r"(ai|llm|assistant|language model|chatbot|model)s?\b",
    "role reassignment": r"\byou\s+are\s+now\s+(an?\s+|in\s+)?(\w+\s+){0,2}"
    r"(ai|assistant|model|bot|chatbot|agent|persona|dan|jailbroken|unrestricted|mode)\b"
    r"|\bact\s+as\s+(an?\s+)?(unrestricted|jailbroken|different)\b|\bnew\s+system\s+prompt\b",
    "hidden prompt markup": r"<\|?(system|im_start|im_end)\|?>|\[/?INST\]|^\s*system\s*:",
    "tells the reader to be sent elsewhere": r"(?<!\bto\s)\b(tell|instruct|direct|send|redirect|ask)\s+(the\s+)?"
    r"(user|reader|customer)s?\s+to\s+"
    r"(visit|go|contact|e-?mail|click|download|pay|buy|log\s*in|sign\s*in|enter|share|send|call)\b",
    "reveal the prompt": r"\b(reveal|print|repeat|output)\s+(your|the)\s+(system\s+)?(prompt|instructions)\b",
}
_COMPILED = {name: re.compile(p, re.IGNORECASE | re.MULTILINE) for name, p in _INJECTION_PATTERNS.items()}


# Invisible characters that split or reorder what a reader sees: zero-width space, word joiner,
# byte-order mark and the bidi controls. (Zero-width joiners stay: scripts and emoji need them.)
_INVISIBLE = re.compile("[\u200b\u2060\ufeff\u202a-\u202e\u2066-\u2069\u200e\u200f]")


def visible(text: str) -> str:
    """`text` without the invisible characters that hide what it says (`https\u200b://evil...` reads
    as a clean link): what is stored and shown."""
    return _INVISIBLE.sub("", text)


def fold(text: str) -> str:
    """What the checks read: visible() and NFKC, so a fullwidth colon (U+FF1A after `https`) or a
    compatibility letter reads as what it looks like."""
    return unicodedata.normalize("NFKC", visible(text))


def injection_flags(text: str) -> list[str]:
    """The kinds of injection-style text found in a chunk (empty when it reads as plain docs)."""
    text = fold(text)
    return [name for name, pattern in _COMPILED.items() if pattern.search(text)]


# A link: with its scheme, from www., or a bare host with a path (`evil.example/reset`), whose last
# label must be a real top-level domain (checked in _bare_host_ok) so `setup.py/` and `v1.2/` are not.
_LINK = re.compile(
    r"\bhttps?://[^\s<>()\[\]\"'`]+|\bwww\.[^\s<>()\[\]\"'`]+"
    r"|(?<![\w@./-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}/[^\s<>()\[\]\"'`]*",
    re.IGNORECASE,
)
_RESERVED_TLDS = {"example", "test", "invalid", "localhost"}  # RFC 2606: in no suffix list, yet hosts
# Top-level domains that are also file extensions: `setup.py/`, `README.md/x` in prose are files.
_FILE_TLDS = {"py", "md", "sh", "pl", "rs", "so", "cc", "ps"}
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")


def _normalise_link(link: str) -> str:
    return link.rstrip(".,;:!?").lower().removeprefix("https://").removeprefix("http://").rstrip("/")


def links_and_emails(text: str) -> list[str]:
    """Links and e-mail addresses in `text`, as the checks read it (fold())."""
    text = fold(text)
    if "/" not in text and "@" not in text and "www." not in text.lower():  # every link or address has one
        return []
    found = [m.group(0).rstrip(".,;:!?") for m in _LINK.finditer(text) if _bare_host_ok(m.group(0))]
    found += [m.group(0) for m in _EMAIL.finditer(text)]
    return list(dict.fromkeys(found))


def _bare_host_ok(link: str) -> bool:
    if "://" in link or link.lower().startswith("www."):
        return True
    host, _, path = link.partition("/")
    tld = host.rsplit(".", 1)[-1].lower()
    return bool(path) and tld not in _FILE_TLDS and (tld in _RESERVED_TLDS or _SUFFIXES.is_public(tld))


def foreign_links(answer: str, sources: Iterable[str]) -> list[str]:
    """Links and e-mail addresses in the answer that no fed source contains."""
    known = {_normalise_link(x) for text in sources for x in links_and_emails(text)}
    return [x for x in links_and_emails(answer) if _normalise_link(x) not in known]


# A command that installs a package, and the package names it gives: an answer telling readers to
# install a name no source gives may have made it up, and a made-up name is one anybody can publish.
_INSTALL = re.compile(
    r"\b(?:(?:npm|pnpm|yarn|bun)\s+(?:install|add|i)|(?:pip3?|pipx|uv\s+pip)\s+install|(?:uv|poetry)\s+add|"
    r"cargo\s+(?:install|add)|go\s+(?:install|get)|gem\s+install|composer\s+require|dotnet\s+add\s+package|"
    r"Install-Package|apt(?:-get)?\s+install|brew\s+install)\b([^\n`|;&]*)"
)
# Options whose value is a file, URL or version rather than a package.
_VALUED = {
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-e",
    "--editable",
    "-i",
    "--index-url",
    "--registry",
    "--git",
    "--branch",
    "--tag",
    "--rev",
    "--path",
    "--version",
    "-v",
    "--source",
    "--root",
}


def install_targets(text: str) -> list[str]:
    """The packages the install commands in a text name, without versions or extras."""
    names: list[str] = []
    for match in _INSTALL.finditer(text):
        words = match.group(1).split()
        for i, word in enumerate(words):
            if word.startswith("-") or (i and words[i - 1] in _VALUED) or "://" in word or word.startswith((".", "/")):
                continue
            name = re.split(r"[=<>~!\[;]|(?<!^)@", word.strip("'\""))[0]  # pkg==1, pkg[extra], pkg@1, @scope/pkg@1
            if name and name not in names:
                names.append(name)
    return names


def foreign_packages(answer: str, sources: Iterable[str]) -> list[str]:
    """Packages an answer's install commands name that no fed source mentions."""
    known = fold(" ".join(sources)).lower()
    return [name for name in install_targets(answer) if name.lower() not in known]


# The list ships in the package (with private suffixes such as github.io) and is never fetched.
_SUFFIXES = PublicSuffixList()
ALLOW_ALL = "*"


def site_of(host: str) -> str:
    """The registrable domain of a host: docs.x.com and console.x.com are one site, a.github.io
    and b.github.io two. An IP address or a bare name (localhost) is its own site."""
    host = host.strip().strip("[]").rstrip(".").lower()
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return _SUFFIXES.privatesuffix(host) or host


def _split(link: str) -> tuple[str, str]:
    """The host and path of a link ("www.x.com/a" too), or an e-mail address's domain."""
    if "://" not in link and "@" in link:
        return link.rsplit("@", 1)[1], ""
    try:
        parts = urlsplit(link if "://" in link else f"http://{link}")
        return parts.hostname or "", parts.path
    except ValueError:  # not a URL at all ("http://[oops"): nobody's site
        return "", ""


def own_sites(urls: Iterable[str], allowed_hosts: str = "") -> frozenset[str]:
    """The docs' own sites: those of their published URLs and of the comma-separated hosts the
    operator allows ("*" allows every host)."""
    hosts = [_split(u)[0] for u in urls if u.lower().startswith(("http://", "https://"))]
    allowed = [h.strip() for h in allowed_hosts.split(",") if h.strip()]
    return frozenset(ALLOW_ALL if h == ALLOW_ALL else site_of(h) for h in hosts + allowed if h)


def _is_local(host: str) -> bool:
    """The reader's own machine or network (`http://0.0.0.0:80` in a server's log line): no
    stranger's site."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified or address.is_link_local


def offsite_links(text: str, own: frozenset[str]) -> list[str]:
    """Links and e-mail addresses in `text` on a site that is not one of `own` (nor local)."""
    if ALLOW_ALL in own:
        return []
    return [x for x in links_and_emails(text) if not _is_local(host := _split(x)[0]) and site_of(host) not in own]


# What a page may send a reader to another site for. A download counts only when the link is to a
# program or script: "download Docker from docker.com" is ordinary documentation.
_CREDENTIALS = "sends readers to another site for credentials"
_PAYMENT = "sends readers to another site for payment"
_PURPOSES = {
    _CREDENTIALS: re.compile(
        r"\b(passwords?|passphrase|credentials?|api[ -]?keys?|secret keys?|access tokens?|sign[ -]?in|log[ -]?in|"
        r"login|verify your (account|identity)|one-time (code|password)|2fa|seed phrase|private key)\b",
        re.IGNORECASE,
    ),
    _PAYMENT: re.compile(
        r"\b(pay|payments?|credit cards?|card (number|details)|billing|invoices?|purchase|wire transfer|"
        r"bank (account|details)|bitcoin|cryptocurrency|wallet)\b",
        re.IGNORECASE,
    ),
}
_DOWNLOAD = "sends readers to another site for a download"
_PROGRAM = re.compile(r"\.(exe|msi|dmg|pkg|deb|rpm|apk|appimage|sh|ps1|bat|cmd|scr|jar)$", re.IGNORECASE)
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
# A line of code that lost its fence (a command, an assignment): its URL is an argument, not a
# place the reader is sent.
_CODE_LIKE = re.compile(r"\s--?[a-z]|[={}$\\]|#!|\b(curl|wget)\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# A run of prose: a paragraph, its wrapped lines joined; a list item, a heading, a table row, a link
# definition or an indented line starts a run of its own.
_BLOCK = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*+]\s|\d+[.)]\s|#|\||>|\[[^\]\n]+\]:|\s{4}))")
# A request that a person type a secret into a page, a sentence away from the link ("Enter your
# password there."): a verb asking for it, not the word alone ("Fix typos in the password form").
_ASKS = r"\b(enter|type|provide|submit|confirm|paste|fill in|give|share|send|use)\b\W+(?:[\w']+\W+){0,4}?"
_TYPED = {
    _CREDENTIALS: re.compile(
        _ASKS + r"(passwords?|passphrase|one-time (code|password)|seed phrase|credentials)\b"
        r"|^\W*(please\s+)?(sign|log)[ -]?in\b|\bverify your (account|identity)\b",
        re.IGNORECASE,
    ),
    _PAYMENT: re.compile(_ASKS + r"(credit cards?|card (number|details)|bank (account|details))\b", re.IGNORECASE),
}


def link_flags(text: str, own: frozenset[str]) -> list[str]:
    """Why a chunk sends readers to another site: its prose asks for credentials or payment in a
    sentence with a link off the docs' own sites or next to one, or it links off them to a program.
    A site the text names ("create a token on GitHub", github.com) is the one it is about, not a
    stranger's: docs send readers to GitHub, AWS or Algolia for their keys all the time."""
    text = fold(text)
    if not offsite_links(text, own):  # most chunks link nowhere else: no sentence can send readers there
        return []
    named = _LINK.sub(" ", _EMAIL.sub(" ", text)).lower()

    def strangers(part: str) -> list[str]:
        return [x for x in offsite_links(part, own) if site_of(_split(x)[0]).split(".")[0] not in named]

    outside = strangers(text)
    flags = []
    for block in _BLOCK.split(_CODE.sub(" ", text)):
        prose = [s for s in _SENTENCE.split(" ".join(block.split())) if not _CODE_LIKE.search(s)]
        for i, sentence in enumerate(prose):
            if strangers(sentence):
                flags += [name for name, words in _PURPOSES.items() if words.search(sentence)]
                # "Open https://x.example/reset. Enter your password there." asks all the same: a secret
                # a person types, in the sentence before or after the link in the same run of prose.
                around = " ".join(prose[max(0, i - 1) : i] + prose[i + 1 : i + 2])
                flags += [name for name, words in _TYPED.items() if words.search(around)]
    # A program is one wherever it is linked, in code too ("curl https://x.example/install.sh | sh").
    flags += [_DOWNLOAD for x in outside if _PROGRAM.search(_split(x)[1])]
    return list(dict.fromkeys(flags))


def check_text(value: str) -> str:
    """Text a request may carry: valid Unicode (no lone surrogate, which JSON's \\ud800 allows) and no
    NUL (which PostgreSQL's text cannot hold). Raises ValueError, which the shells turn into a 4xx."""
    if "\0" in value:
        raise ValueError("text may not hold a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text is not valid Unicode (a lone surrogate such as \\ud800)") from None
    return value
