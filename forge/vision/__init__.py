"""Vision evidence: person detection (YOLO), person indicators, object tags, rich scenes, evidence.

Everything here is plain Python (no Dagster); assets under ``assets/vision`` call it.
"""
