"""Storage: the embedded server's lifecycle, schema migrations and all SQL."""

from . import sync_rows
from .database import ChunkRow, SearchFilter, SearchHit, SourceInfo, Store, embed_hash
from .search_sql import SEARCH_MODES, WordMatch

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
