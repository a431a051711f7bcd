"""Benchmarks: `python -m benchmarks [--quick]`; each reports ratios to a baseline run alongside."""
