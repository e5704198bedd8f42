"""Published releases as inputs: one importer and one side-by-side report per paper (docs/releases.md)."""
