"""What an ingest reports: its counts, paths and findings as it goes (the progress callback sees it
after each file) and at the end, and the interruption that still carries it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pgcite.ingest.sources import Skipped
from pgcite.retrieval.calibration import Calibration


@dataclass
class IngestReport:
    source: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    rerouted: int = 0  # the same text at other links (another builder, route base or base URL): set in place
    removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    others: int = 0  # files that are not pages of the site (counted, not read)
    chunks_embedded: int = 0
    chunks_reused: int = 0  # their vectors were stored before this ingest
    chunks_repeated: int = 0  # their text was another chunk's of this same ingest (embedded once)
    seconds: float = 0.0
    site: str = ""
    base_url: str = ""
    versions: tuple[str, ...] = ()
    default_version: str = ""
    languages: tuple[str, ...] = ()  # the site's, the default first
    left_out: int = 0  # pages in languages `--languages` did not keep
    stale_answers: int = 0  # logged answers that cited a section this ingest changed or removed
    # "path > heading: kinds" of chunks that read like instructions to an AI (left out of answers).
    flagged: list[str] = field(default_factory=list)
    # "path: include X left out: why", one per include that could not be read.
    problems: list[str] = field(default_factory=list)
    # The paths of the new, changed and removed files.
    paths: dict[str, list[str]] = field(default_factory=lambda: {"new": [], "changed": [], "removed": []})
    # The files the stored pages include, as paths from the source's root ("../src/app.py" for a
    # file beside an ingested folder): what else `--watch` watches.
    included: list[str] = field(default_factory=list)
    calibration: Calibration | None = None  # the source's relevance bar, as measured (calibration.py)
    scanned: int = 0  # files looked at so far (a page read counts before its chunks are written)

    @property
    def files_read(self) -> int:
        return self.new + self.changed + self.unchanged + self.rerouted + len(self.skipped)

    def summary(self) -> str:
        versions = f", versions {', '.join(self.versions)} (default {self.default_version})" if self.versions else ""
        if len(self.languages) > 1:
            versions += f", languages {', '.join(self.languages)} (default {self.languages[0]})"
        if self.left_out:
            versions += f", {self.left_out} pages in other languages left out"
        if self.stale_answers:
            versions += f"; {self.stale_answers} logged answers cited sections that changed (pgcite log --stale)"
        rerouted = f"{self.rerouted} re-routed, " if self.rerouted else ""
        return (
            f"{self.source}: {self.new} new, {self.changed} changed, {self.unchanged} unchanged, {rerouted}"
            f"{self.removed} removed, {len(self.skipped)} skipped files, {self.others} other files; "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_reused} reused"
            f"{f', {self.chunks_repeated} repeated' if self.chunks_repeated else ''}; {self.site} site{versions}; "
            f"{self.seconds:.1f} s"
        )


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during an ingest, raised once its end has run: what was read so far is `report`."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__("interrupted")
        self.report = report


# Called after each file is read and after each slice is embedded, with the file's path and the
# report so far.
Progress = Callable[[str, IngestReport], None]
