"""Quality gates between splits and review: field checks, duplicates, the text-only probe, option positions (docs/splits.md)."""
