"""Public benchmark formats converted into the benchmark file of docs/bring_your_own_benchmark.md.

One module per source: ``statements`` (items with requirement statements and multiple-choice quizzes),
``question_files`` (TIFA and DSG question files), ``sciir_release`` (SciIR's own benchmark and checklist
tables), ``prompt_lists`` (prompts alone, their checklists written by a model); ``common`` holds what
they share and ``field_map`` which field of an input holds what. The command line is
``python -m sciir.benchmark_import``.
"""
