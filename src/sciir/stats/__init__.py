"""Statistics of the human-correlation study (correlations with intervals, comparisons between metrics,
agreement between raters), the bootstrap, and the paired comparisons of models on the same items (paired
tests and Holm's correction, rank intervals, the difference a benchmark can detect)."""
