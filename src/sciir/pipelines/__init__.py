"""The eight pipelines, a package per stage, each with its nodes and its ``create_pipeline`` (registered by
``sciir.pipeline_registry``; docs/architecture.md). A file with content: DVC warns at every stage of a
``dvc repro`` about a dependency that is an empty file, and every stage depends on this one."""
