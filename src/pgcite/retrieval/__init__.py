"""Finding sections: search and the relevance bar, second-stage ranking, each source's calibration.
May import embedding, the store and the shared vocabulary; never answer, ingest or anything above."""
