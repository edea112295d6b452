"""Storage: the embedded server's lifecycle, schema migrations and all SQL.
May import only config, the shared vocabulary and errors."""

from pgcite.store import sync_rows
from pgcite.store.database import Store
from pgcite.store.documents_sql import ChunkRow, SourceInfo, embed_hash
from pgcite.store.search_sql import SEARCH_MODES, WordMatch
from pgcite.vocabulary import SearchFilter, SearchHit

__all__ = [
    "SEARCH_MODES",
    "ChunkRow",
    "SearchFilter",
    "SearchHit",
    "SourceInfo",
    "Store",
    "WordMatch",
    "embed_hash",
    "sync_rows",
]
