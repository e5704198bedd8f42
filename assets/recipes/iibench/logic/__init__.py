"""II-Bench (image implication MCQs): implication filter, labels, six-option questions.

Pure logic only (no Dagster): building LLM requests, parsing and validating replies,
distractor checks and item construction. The assets live in ``assets/recipes/iibench``.
"""
