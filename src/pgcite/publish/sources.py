"""The sources, as readers see them, on the application object: listing them within a caller's
scope, and why a search found nothing when a version or a language left a source without pages."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from pgcite.errors import PgciteError, UnknownSourceError
from pgcite.store import SourceInfo, Store
from pgcite.vocabulary import SearchFilter


def no_source(name: str, known: Sequence[str] | None = None) -> PgciteError:
    """known: the source names the caller may see, to name them (a typo is seen at once)."""
    if known is None:
        return UnknownSourceError(f"no source named {name!r}; list them with `pgcite sources` or GET /v1/sources")
    there = f"the sources are {', '.join(known)}" if known else "nothing is ingested yet"
    return UnknownSourceError(f"no source named {name!r}: {there}")


class SourceOps:
    """Mixed into core.Pgcite, which provides the reader."""

    if TYPE_CHECKING:

        def reader(self) -> AbstractContextManager[Store]: ...

    def source(self, name: str, allowed: Sequence[str] | None = None) -> SourceInfo:
        listed = self.sources(allowed)
        found = [s for s in listed if s.name == name]
        if not found:
            raise no_source(name, [s.name for s in listed])
        return found[0]

    def sources(self, allowed: Sequence[str] | None = None) -> list[SourceInfo]:
        with self.reader() as store:
            rows = store.list_sources()
        return rows if allowed is None else [r for r in rows if r.name in allowed]

    def why_nothing(self, filters: SearchFilter) -> str:
        """Why a search with `filters` may have found nothing, when a source's version or language
        leaves it without pages ("" when none does): said beside "No sections found"."""
        scope = [filters.source] if filters.source else filters.allowed_sources
        sources = self.sources(scope)
        if filters.source and not sources:
            return f"there is no source {filters.source!r}: `pgcite sources` lists them"
        reasons = []
        for s in sources:
            versions = [v for v in s.versions if v]
            if filters.version is None and versions and s.default_version not in s.versions:
                reasons.append(
                    f"source {s.name!r} has no pages in its default version {s.default_version!r}; it holds "
                    f"{', '.join(versions)}: name one (--version, or `version`)"
                )
            elif filters.version is not None and filters.version not in s.versions:
                holds = f"it holds {', '.join(versions)}" if versions else "it has no versions"
                reasons.append(f"source {s.name!r} has no version {filters.version!r}; {holds}")
            wanted = (filters.language or "").lower()
            if wanted and s.languages and not any(lang.split("-")[0] == wanted.split("-")[0] for lang in s.languages):
                reasons.append(f"source {s.name!r} has no {wanted!r} pages; it holds {', '.join(s.languages)}")
        return "; ".join(reasons)

    def require_source(self, name: str | None, allowed: Sequence[str] | None = None) -> None:
        """Fail with not_found unless `name` (when given) is a source the caller may read."""
        if name is not None:
            self.source(name, allowed)
