"""The items table every recipe writes, as the after-recipe chain reads it: columns, field checks, typed rows, the export manifest reader (lowest layer, docs/splits.md)."""
