"""What ingest and curate need: JATS articles, licence rules, privacy, panel detection and splitting,
geometric rules, standardisation, near-duplicates, the review queue, the curated table, and curate's
shards on Dask."""
