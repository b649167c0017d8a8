"""Readers: what an image shows, read by rules (no model): its text with boxes (Tesseract, and PP-OCR where
Tesseract leaves doubt), the shapes and arrows of a diagram, plot axes and line art. The rule-based
backends hand them to each task's own answerer (``sciir.tasks``); they know no task."""
