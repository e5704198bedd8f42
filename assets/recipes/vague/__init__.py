"""The vague benchmark, one package (docs/conventions.md): spec.py (what the shared stages read),
logic/ (Dagster-free), assets.py / checks.py / release.py / definitions.py (its Dagster files),
config.yaml, contracts/, prompts/, evals.yaml, eval_prompts/ and README.md."""
