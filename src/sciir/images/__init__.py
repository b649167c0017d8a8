"""Image files: decoding untrusted files, colour normalisation, the payloads model requests carry,
Lanczos resizing. Knows nothing of figures, tasks or backends."""
