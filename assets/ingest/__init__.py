"""Ingest group: the media trunk (sources → videos → clips → frames, then dedup and OCR)."""
