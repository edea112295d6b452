"""Finding sections: search and the relevance bar, second-stage ranking, each source's calibration."""
