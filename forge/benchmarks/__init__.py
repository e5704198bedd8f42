"""Benchmark specs and their registry (docs/benchmarks.md)."""
