"""MAIA (maia.md): questions in 12 reasoning categories per ~30 s clip, 8-answer pools, true
statements, category-specific foils, and the statement-verification / open-ended items."""
