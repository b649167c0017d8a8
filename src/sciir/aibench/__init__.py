"""AIBench (Liao et al.): logic graphs, four levels of yes/no questions, the solver protocol, scores and
aesthetics, one module each (graph, questions, solver, scoring, aesthetics; params for the settings)."""
