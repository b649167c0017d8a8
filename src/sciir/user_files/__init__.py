"""Files users bring: a benchmark file (prompts and checklists), importers of public benchmark
layouts, the tables users hand in (verdicts, ratings, metric scores)."""
