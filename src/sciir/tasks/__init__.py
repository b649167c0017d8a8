"""Model tasks: one per prompt (template under ``conf/base/tasks``, strict reply schema, parser, and an
offline answerer where one can answer honestly), registered by name in ``sciir.tasks.registry``."""
