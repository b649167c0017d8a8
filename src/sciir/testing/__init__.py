"""Real fakes for tests and local runs.

- :mod:`sciir.testing.fake_openai_server`: a loopback OpenAI-compatible server with scripted answers and
  fault injection (also runnable with ``python -m``, so this package imports nothing eagerly).
- :mod:`sciir.testing.scripted`: small scripted backends.
"""
