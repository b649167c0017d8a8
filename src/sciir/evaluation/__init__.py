"""Evaluation: generated images found and checked, verdict tables, aggregation rules, strict veto
scoring, judge validation, baseline metrics, plots and the HTML report."""
