"""`pgcite review BASE HEAD`: what a docs change does to the answers. BASE is ingested into a
throw-away source and the questions asked; HEAD is ingested over it (only the files that differ
are read again) and the questions asked again. Every answer that changed is reported: answered and
now refused or the reverse, its fact lost or gained, other sections cited, new warnings from the
checks; and the links between pages that the change breaks."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import os
import posixpath
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pgcite.answer.flow import Answer
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.evaluation.metrics import contains_fact
from pgcite.evaluation.questions import Question
from pgcite.evaluation.site_links import BrokenLink, read_links
from pgcite.ingest.sites import levels_above
from pgcite.vocabulary import SearchFilter, wording_key

__all__ = [
    "KINDS",
    "LINK_KINDS",
    "Change",
    "Cited",
    "Review",
    "Side",
    "checkout",
    "compare",
    "logged_questions",
    "review",
]

# What can change in an answer, in the order a report lists them (and --fail-on names them).
KINDS = {
    "refused": "answered before, refused now",
    "lost-fact": "lost the fact the question set expects",
    "moved": "cite other sections",
    "new-warning": "carry a new warning from the checks",
    "answered": "refused before, answered now",
    "gained-fact": "hold the expected fact now",
}
# What can break in the site itself (site_links.py), also for --fail-on.
LINK_KINDS = {
    "broken-link": "links between pages now lead to no page",
    "broken-anchor": "links between pages now lead to no section (an anchor gone)",
    "lost-url": "URLs the answer log cited now lead nowhere",
}


@dataclass(frozen=True)
class Cited:
    """A section an answer cites, named as the reader sees it."""

    path: str
    heading: str  # "Page > Heading"
    url: str

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.heading


@dataclass(frozen=True)
class Side:
    """One version's answer to a question."""

    refused: bool
    text: str
    cited: tuple[Cited, ...]
    fact: bool | None  # the question set's answer_fact found in it (None: it names none)
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    id: str
    question: str
    kinds: tuple[str, ...]
    base: Side
    head: Side


@dataclass
class Review:
    base: str
    head: str
    questions: int = 0
    changes: list[Change] = field(default_factory=list)
    broken_links: list[BrokenLink] = field(default_factory=list)  # broken by the change, not before
    lost_urls: list[tuple[str, str]] = field(default_factory=list)  # (URL the log cited, why it leads nowhere)

    @property
    def counts(self) -> dict[str, int]:
        found = collections.Counter(kind for change in self.changes for kind in change.kinds)
        found["broken-link"] = sum(1 for b in self.broken_links if b.why == "no page")
        found["broken-anchor"] = len(self.broken_links) - found["broken-link"]
        found["lost-url"] = len(self.lost_urls)
        return {kind: found[kind] for kind in (*KINDS, *LINK_KINDS)}

    def failed(self, fail_on: Sequence[str]) -> list[str]:
        """The kinds among `fail_on` that some answer shows."""
        return [kind for kind in fail_on if self.counts.get(kind)]


def _side(answer: Answer, fact: str | None) -> Side:
    by_number = {p.number: p.hit for p in answer.sources}
    cited = tuple(
        dict.fromkeys(
            Cited(hit.path, hit.breadcrumb or hit.title, hit.url)
            for n in answer.citations
            if (hit := by_number.get(n)) is not None
        )
    )
    return Side(
        answer.refused,
        answer.text,
        cited,
        None if fact is None else (not answer.refused and contains_fact(answer.text, fact)),
        tuple(answer.checks.warnings()),
    )


def compare(base: Side, head: Side) -> tuple[str, ...]:
    """The kinds of change from `base` to `head` (none: the same answer, as far as a reader can tell)."""
    kinds = []
    if not base.refused and head.refused:
        kinds.append("refused")
    if base.refused and not head.refused:
        kinds.append("answered")
    if base.fact and head.fact is False:
        kinds.append("lost-fact")
    if base.fact is False and head.fact:
        kinds.append("gained-fact")
    if not base.refused and not head.refused and {c.key for c in base.cited} != {c.key for c in head.cited}:
        kinds.append("moved")
    if set(head.warnings) - set(base.warnings):
        kinds.append("new-warning")
    return tuple(kind for kind in KINDS if kind in kinds)  # the gravest first


def _label(location: str) -> str:
    digest = hashlib.sha256(f"{location}\0{os.getpid()}\0{datetime.now().isoformat()}".encode()).hexdigest()
    return digest[:10]


def review(
    app: Pgcite,
    base: str,
    head: str,
    questions: Sequence[Question],
    *,
    options: dict | None = None,
    labels: tuple[str, str] | None = None,
    cited_urls: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> Review:
    """Ingest `base` (a folder) into a throw-away source with the ingest `options` and ask each
    question; ingest `head` over it (only the files that differ are read again) and ask again.
    Report the answers that changed, the links between pages the change breaks, and which of
    `cited_urls` (the answer log's) lead nowhere now. The source is removed after."""
    if not questions and not cited_urls:
        raise PgciteError("no questions to replay: give --questions FILE or --from-log with --source NAME")
    name = f"review-{_label(base + head)}"
    result = Review(*(labels or (base, head)), questions=len(questions))
    answers: dict[str, list[Side]] = {}
    links = {}
    try:
        for side, location in (("base", base), ("head", head)):
            if progress:
                progress(f"ingesting {side}: {location}")
            app.ingest(location, source=name, **(options or {}))
            with app.reader() as store:
                links[side] = read_links(store, name, app.source(name).base_url)
            answers[side] = []
            for number, q in enumerate(questions, start=1):
                if progress:
                    progress(f"asking {side} {number}/{len(questions)}: {q.question[:60]}")
                asked = app.ask(q.question, filters=SearchFilter(source=name, exclude_flagged=True))
                answers[side].append(_side(asked, q.answer_fact))
    finally:
        with contextlib.suppress(PgciteError):
            app.remove_source(name)
    for q, before, after in zip(questions, answers["base"], answers["head"], strict=True):
        if kinds := compare(before, after):
            result.changes.append(Change(q.id, q.question, kinds, before, after))
    already = {(b.path, b.target) for b in links["base"].broken()}
    result.broken_links = [b for b in links["head"].broken() if (b.path, b.target) not in already]
    result.lost_urls = [
        (url, why)
        for url in dict.fromkeys(cited_urls)
        if not links["base"].resolve(url) and (why := links["head"].resolve(url))
    ]
    return result


def logged_questions(app: Pgcite, source: str, since: datetime | None, top: int) -> tuple[list[Question], list[str]]:
    """The `top` most asked questions of `source` in the answer log since `since`, refusals
    included, and every URL its answers cited."""
    asked: collections.Counter[str] = collections.Counter()
    wording: dict[str, str] = {}
    urls: dict[str, None] = {}
    for entry in app.log_entries(since=since, source=source, limit=None):
        key = wording_key(entry.question)
        asked[key] += 1
        wording.setdefault(key, entry.question)
        urls |= {s["url"]: None for s in entry.retrieved if s.get("cited") and s.get("url")}
    top_asked = [Question(f"log-{i}", wording[key]) for i, (key, _) in enumerate(asked.most_common(top), start=1)]
    return top_asked, list(urls)


@contextlib.contextmanager
def checkout(folder: str, revisions: Sequence[str], site: str | None = None) -> Iterator[list[str]]:
    """`folder` as it stands at each git revision, extracted into temporary folders with
    `git archive` (the user's checkout and index are never touched); yields their paths. When the
    site's configuration lies above the folder (a docs folder inside a site), the site's root comes
    too, so its routing and includes are read as an ingest of the folder reads them."""
    try:
        top = _git(folder, "rev-parse", "--show-toplevel").decode().strip()
    except PgciteError:
        raise PgciteError(
            f"{folder} is not inside a git repository; give two folders, or --git a folder of a repository"
        ) from None
    inside = posixpath.relpath(os.path.abspath(folder), top).replace(os.sep, "/")
    up = levels_above(folder, site) if os.path.isdir(folder) else 0
    extracted = posixpath.normpath(posixpath.join(inside, *[".."] * up))
    extracted = "." if extracted.startswith("..") else extracted  # never above the repository
    with tempfile.TemporaryDirectory(prefix="pgcite-review-") as tmp:
        paths = []
        for index, revision in enumerate(revisions):
            target = os.path.join(tmp, str(index))
            os.mkdir(target)
            archive = _git(top, "archive", "--format=tar", revision, "--", extracted)
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(target, filter="data")  # no path leaves the folder, no device or link out
            paths.append(os.path.join(target, inside) if inside != "." else target)
        yield paths


def _git(folder: str, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", folder, *args], capture_output=True, check=False, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PgciteError(f"git {args[0]} could not run: {exc}") from None
    if done.returncode:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise PgciteError(f"git {args[0]} in {folder}: {message[-1] if message else 'failed'}")
    return done.stdout
