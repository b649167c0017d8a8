"""The generate stage's work: requests per generator and role (a contestant gets the prompt, seed and size;
a reference the annotation's plan), drawing them, the manifest and per-image timings; and the test-time
scaling around any contestant generator: the reasoning planner and best-of-N selection."""
