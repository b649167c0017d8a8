"""What a Kedro run does besides its nodes' work: start-up checks, provenance in MLflow and DVC, the model
registry, progress bars and long lists in the log, where results go, the dry-run summary."""
