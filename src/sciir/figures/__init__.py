"""What ingest and curate need: JATS articles, licence rules, privacy, panel detection and splitting,
geometric rules, standardisation, near-duplicates, the review queue, and curate's shards on Dask."""
