"""Leakage-free splits of a benchmark's items: leakage groups, stratified assignment, split settings (docs/splits.md)."""
