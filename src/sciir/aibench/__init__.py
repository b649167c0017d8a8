"""AIBench (Liao et al.): logic graphs, four levels of yes/no questions, scores per level, one module each
(graph, questions, level_accuracy; params for the settings; reference_plan for the references' drawings).
The solver and aesthetics tasks are ``sciir.tasks``'; the examination of the illustrations is
``sciir.evaluation.aibench_examination``."""
