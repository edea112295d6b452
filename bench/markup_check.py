"""Scan every stored chunk for site-generator markup a reader never sees (pgcite.ingest.sites.leftovers):
JSX and HTML tags, MDX imports and comments, `:::` containers, MkDocs blocks, attribute lists,
include directives, shortcodes and templates, in the prose of the chunk (code is left out: it may
show markup on purpose) and in its breadcrumb.

    .venv/bin/python bench/markup_check.py [--source NAME] [--examples N]

Uses the same settings as pgcite (PGCITE_HOME or PGCITE_DATABASE_URL). Prints the count of chunks
per kind of markup with examples, and exits 1 when any chunk holds some, so CI can gate on it.
"""

from __future__ import annotations

import argparse
import collections
import sys

from pgcite.config import load_settings
from pgcite.ingest.sites.leftovers import leftovers
from pgcite.store import Store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", help="only this source")
    parser.add_argument("--examples", type=int, default=3, help="examples shown per kind of markup")
    args = parser.parse_args()
    with Store.open(load_settings(), read_only=True) as store:
        rows = store.conn.execute(
            "SELECT c.id, c.breadcrumb, c.content, c.path LIKE '%%.mdx' OR s.site = 'docusaurus' FROM chunks c "
            "JOIN sources s ON s.name = c.source WHERE %(source)s::text IS NULL OR c.source = %(source)s ORDER BY c.id",
            {"source": args.source},
        ).fetchall()
    kinds: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    dirty = 0
    for chunk_id, breadcrumb, content, mdx in rows:  # Docusaurus reads .md as MDX too
        found = leftovers(content, mdx=mdx) + [f"{kind} (in the breadcrumb)" for kind in leftovers(breadcrumb, heading=True)]
        dirty += bool(found)
        for kind in found:
            kinds[kind] += 1
            if len(examples[kind]) < args.examples:
                examples[kind].append(chunk_id)
    scope = f"source {args.source}" if args.source else "all sources"
    print(f"{len(rows)} chunks ({scope}); {dirty} hold generator markup")
    for kind, count in kinds.most_common():
        print(f"  {count:6d}  {kind}: e.g. {', '.join(examples[kind])}")
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main())
