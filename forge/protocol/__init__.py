"""Human protocol steps: what people did in the papers, with the LLM's output as their draft, hidden unless a step shows it (forge/protocol/steps.py)."""
