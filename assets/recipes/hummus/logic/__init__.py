"""Hummus (humorous multimodal metaphor use in image-caption pairs): annotation per §4 and
the six benchmark tasks of Table 1.

Pure logic only (no Dagster): validating annotation replies (metaphor format, boxes,
caption spans, explanation length, figurative devices) and building task items. The
assets live in ``assets/recipes/hummus``.
"""
