"""Reading docs into the store: sources, site generators, Markdown, chunking, the flow, sync.
May import retrieval (calibration), embedding, the store and the shared vocabulary; never answer or core."""
