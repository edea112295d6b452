"""Answering: the event stream (flow), its checks, and the generators (extractive, chat).
May import retrieval, embedding, the store and the shared vocabulary; never ingest, learn or core."""
