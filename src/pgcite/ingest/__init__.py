"""Reading docs into the store: sources, site generators, Markdown, chunking, the flow, sync."""
