"""Benchmarks: `python -m benchmarks [--quick]`; each reports ratios against a baseline run alongside."""
