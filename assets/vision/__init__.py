"""Vision evidence group: detections -> person_indicators, tags -> rich_scenes -> evidence.

The assets and their ``defs`` live in ``assets/vision/assets.py`` (discovered by definitions.py).
"""
