"""The annotate stage's work: the four annotation tasks asked of every curated sample in dependency order
(``sample_work``), the ``annotations`` and ``checklists`` tables and metrics (``tables``), and AIBench's logic
graph and four levels of questions per sample (``aibench_graphs``). The tasks themselves are ``sciir.tasks``."""
