"""Model evaluations (docs/evals.md): models, settings, answer extraction, scorers, bootstrap.

Dagster-free. ``assets/evals`` wires these into one asset per benchmark, partitioned by model.
"""
