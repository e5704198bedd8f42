"""Leakage-free splits, quality gates and versioned exports of benchmark items (docs/splits.md)."""
