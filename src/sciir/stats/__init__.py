"""Statistics of the human-correlation study: correlations with intervals, comparisons between metrics,
agreement between raters, the bootstrap."""
