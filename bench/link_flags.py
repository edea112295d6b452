"""False positives of the ingest flags on real docs: every chunk of pgcite's docs and of the shared
corpora, cleaned and chunked as `pgcite ingest` does (no embedding, no database), is checked for
text addressed to an AI and for links sending readers to another site for credentials, payment
or a download (pgcite.safety). Each corpus is checked with its base URL as CI ingests it and with
none (every link then leads off the docs' own sites).

    .venv/bin/python bench/link_flags.py [--examples N]

Prints per corpus the chunks and how many of each are flagged, with examples; exits 1 when any
chunk is flagged as CI ingests them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pgcite.config import load_settings
from pgcite.embedding.models import LocalEmbedder
from pgcite.ingest.flow import chunk_budget, chunk_document, open_location
from pgcite.safety import injection_flags, link_flags, own_sites
from pgcite.ingest.sites import detect
from pgcite.ingest.sources import Skipped

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
# (name, folder, site, base URL as .ci/run ingests it)
SETS = [
    ("pgcite", ROOT / "docs", None, ""),
    ("marten", CORPORA / "marten-docs", "vitepress", ""),
    ("anthropic", CORPORA / "anthropic-docs" / "pages", None, ""),
    ("fastapi", CORPORA / "fastapi-docs" / "docs" / "en", None, ""),  # site_url in mkdocs.yml
    ("docusaurus", CORPORA / "docusaurus-docs" / "website", None, "https://docusaurus.io/"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    settings, embedder = load_settings(), LocalEmbedder()
    budget = chunk_budget(settings, embedder)
    flagged_as_ci = 0
    print(f"{'set':<11} {'chunks':>7} {'AI-addressed':>12} {'links (CI)':>10} {'links (no base URL)':>19}")
    for name, folder, site_name, base_url in SETS:
        if not folder.is_dir():
            print(f"{name:<11} skipped: {folder} is absent")
            continue
        source = open_location(str(folder), settings)
        site = detect(source, site_name)
        source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
        own, none = own_sites([base_url or site.base_url]), frozenset()
        chunks = ai = links = links_bare = 0
        examples: list[str] = []
        for item in source.scan():
            if isinstance(item, Skipped):
                continue
            page = site.render(item)
            for chunk in chunk_document(page.parsed, settings, embedder, budget):
                chunks += 1
                addressed, sent, bare = (injection_flags(chunk.content), link_flags(chunk.content, own),
                                         link_flags(chunk.content, none))
                ai, links, links_bare = ai + bool(addressed), links + bool(sent), links_bare + bool(bare)
                if (found := addressed + sent or bare) and len(examples) < args.examples:
                    examples.append(f"    {item.path} > {chunk.heading}: {', '.join(found)}")
        flagged_as_ci += ai + links
        print(f"{name:<11} {chunks:>7} {ai:>12} {links:>10} {links_bare:>19}")
        print("\n".join(examples), end="\n" if examples else "")
    return 1 if flagged_as_ci else 0


if __name__ == "__main__":
    sys.exit(main())
