"""Evaluation: generated images found and checked, the judge asked about each image, verdict tables,
aggregation rules, strict veto scoring, the leaderboard (and its text), judge validation, the AIBench
examination, baseline metrics, plots and the HTML report, and the metrics and MLflow runs of evaluate."""
