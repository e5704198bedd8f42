"""Human protocol steps: what people did in the papers, with the LLM's output as their suggestion (forge/protocol/steps.py)."""
