"""The embedded sample: synthetic scientific figures in JATS articles declared CC BY 4.0.

``write_embedded_sample(out_dir, seed)`` writes it and returns its manifest.
"""

from sciir.sample.build import write_embedded_sample

__all__ = ["write_embedded_sample"]
