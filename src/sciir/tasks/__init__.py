"""Model tasks, one module each: its request builder, its strict reply schema, its parser into typed records
and, where rules can answer it honestly, its offline answerer, declared as a ``ModelTask`` (``task.py``);
its prompt template in ``conf/base/tasks/<task>.yml`` (``prompts.py``). ``registry.py`` lists them and hands
their rules to the rule-based backends. Shared by several tasks: ``annotation.py`` (the four annotation
tasks), ``sight_checks.py`` (yes/no checks of an image), ``relations.py`` (directed relations), ``laws.py``.
"""
