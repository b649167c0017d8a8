"""Benchmark selection (SciIR appendix C): groups and settings, quality control, leakage control, the
validation split and the dataset release."""
