"""Embedding with the cache, and storing: a batch of files is embedded on a worker thread, reusing the
stored vector of any text embedded before, while the next batch is read; each file is then written."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import psycopg

from pgcite.embedding.models import Embedder, fingerprint
from pgcite.errors import first_line
from pgcite.ingest.chunking import Chunk
from pgcite.ingest.report import IngestReport, Progress
from pgcite.ingest.sites import Page, join_url
from pgcite.ingest.sources import Skipped
from pgcite.safety import injection_flags, link_flags
from pgcite.store import ChunkRow, Store, embed_hash

EMBED_SLICE = 128  # chunks embedded between two progress reports (about 5 s with the bundled model)


def cache_text(embedder: Embedder, text: str) -> str:
    """What a chunk's cached vector is keyed by, beside the model: the text as the server gets it,
    and the input type it is sent with (only when one is set, so older caches stay valid)."""
    text = embedder.document_prefix + text
    return f"\0input_type={embedder.document_input_type}\0{text}" if embedder.document_input_type else text


@dataclass
class Pending:
    page: Page
    checksum: str  # flow.processing_checksum
    chunks: list[Chunk]
    is_new: bool
    stamp: str  # the file's, from the listing
    file_checksum: str


class Writer:
    """Embeds one batch of files on a worker thread while the caller stores the batch before and
    reads and chunks the next: the model (ONNX Runtime, which releases the GIL) is not left waiting
    on reading, chunking or storing. Each file is stored in its own transaction; a text is embedded
    once per ingest however often it repeats (the batch before serves the next from memory)."""

    def __init__(
        self,
        source_name: str,
        base_url: str,
        version: str,
        store: Store,
        embedder: Embedder,
        report: IngestReport,
        progress: Progress | None,
        own: frozenset[str],
    ) -> None:
        self.source_name, self.base_url, self.version = source_name, base_url, version
        self.own = own  # the docs' own sites, for the link flags
        self.store, self.embedder, self.report, self.progress = store, embedder, report, progress
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pgcite-embed")
        self._in_flight: tuple[list[Pending], dict[int, bytes], Future] | None = None
        self._seen: set[bytes] = set()  # texts of this ingest so far, embedded or reused
        self._identity_checked = False

    def submit(self, pending: list[Pending]) -> None:
        """Start embedding what the cache lacks of `pending`, then store the batch before while it
        embeds: the model waits neither on the safety checks nor on the database."""
        if not pending:
            return
        # The cache key is the exact text the model sees, prefix included.
        hashes = {
            id(c): embed_hash(self.embedder.model, cache_text(self.embedder, c.embed_text))
            for p in pending
            for c in p.chunks
        }
        before, self._in_flight = self._in_flight, None
        # The batch before is not stored yet: its vectors serve this one from memory, the rest from the store.
        done = before[2].result() if before else {}
        vectors = self.store.cached_embeddings(list(set(hashes.values()) - done.keys()))
        vectors.update((h, done[h]) for h in hashes.values() if h in done)
        missing: dict[bytes, str] = {}
        for c in (c for p in pending for c in p.chunks):
            h = hashes[id(c)]
            if h in self._seen:
                self.report.chunks_repeated += 1
            elif h in vectors:
                self.report.chunks_reused += 1
            else:
                missing[h] = c.embed_text
            self._seen.add(h)
        if missing and not self._identity_checked:
            # Before the first new vector is stored (and only then: a sync with nothing new to embed
            # does not load the model): the model is the one the stored vectors came from.
            self.store.check_fingerprint(self.embedder.model, fingerprint(self.embedder), record=True)
            self._identity_checked = True
        self._in_flight = (
            pending,
            hashes,
            self._worker.submit(self._embed, list(missing.items()), vectors, pending[-1].page.path),
        )
        if before:
            self._store(before[0], before[1], done)

    def finish(self) -> None:
        """Store the batch being embedded, once its vectors are there."""
        if self._in_flight is not None:
            pending, hashes, vectors = self._in_flight
            self._in_flight = None
            self._store(pending, hashes, vectors.result())

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)

    def _embed(self, missing: list[tuple[bytes, str]], vectors: dict, path: str) -> dict:
        # In slices, so that progress is seen while one huge page (a changelog of 1,700 chunks) embeds.
        for start in range(0, len(missing), EMBED_SLICE):
            part = missing[start : start + EMBED_SLICE]
            vectors.update(
                zip((h for h, _ in part), self.embedder.embed_documents([text for _, text in part]), strict=True)
            )
            self.report.chunks_embedded += len(part)
            if self.progress:
                self.progress(path, self.report)
        return vectors

    def _store(self, pending: list[Pending], hashes: dict[int, bytes], vectors: dict) -> None:
        source_name, base_url, version, report = self.source_name, self.base_url, self.version, self.report
        for p in pending:
            page = p.page
            rows = [
                ChunkRow(
                    id=f"{source_name}:{page.path}#{c.index}",
                    ord=c.index,
                    heading=c.heading,
                    heading_path=c.heading_path,
                    breadcrumb=c.breadcrumb,
                    anchor=c.anchor,
                    url=join_url(base_url, page.route, c.anchor),
                    content=c.content,
                    tokens=c.tokens,
                    embed_hash=hashes[id(c)],
                    embedding=vectors[hashes[id(c)]],
                    flags=tuple(injection_flags(c.content) + link_flags(c.content, self.own)),
                )
                for c in p.chunks
            ]
            try:
                self.store.replace_document(
                    source_name,
                    page.path,
                    page.title,
                    join_url(base_url, page.route),
                    p.checksum,
                    rows,
                    page.version or version,
                    page.kind,
                    page.included,
                    p.stamp,
                    p.file_checksum,
                    markdown=page.parsed.markdown,
                    description=page.parsed.description,
                    language=page.language,
                    position=page.position,
                )
            except (psycopg.errors.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
                # What this page holds, not the database: say so for the page, and go on.
                report.skipped.append(Skipped(page.path, f"could not be stored: {first_line(exc)[:300]}"))
                continue
            report.flagged += [
                f"{page.path} > {r.heading or page.title}: {', '.join(r.flags)}" for r in rows if r.flags
            ]
            if p.is_new:
                report.new += 1
            else:
                report.changed += 1
            report.paths["new" if p.is_new else "changed"].append(page.path)
        if self.progress:
            self.progress(pending[-1].page.path, report)
