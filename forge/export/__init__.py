"""Immutable versioned exports of the reviewed items: files, dataset card, Hub metadata, provenance (docs/splits.md)."""
