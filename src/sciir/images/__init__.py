"""Image files: decoding untrusted files, bit depth and colour normalisation, border (edge) colours, the
payloads model requests carry, Lanczos resizing. Knows nothing of figures, tasks or backends."""
