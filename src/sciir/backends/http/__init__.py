"""The transport of HTTP model backends: one shared async session per stream, bounded concurrency, retries
with backoff and ``Retry-After``, client-side rate limits, JSON bodies (``client.HTTPBackend`` is the base an
HTTP backend subclasses)."""
