"""Test-time scaling around any contestant generator: the reasoning planner and best-of-N selection."""
