"""Human gold from an imported release in place of LLM-made fields: an explicit step applied to a spec's items (docs/releases.md)."""
