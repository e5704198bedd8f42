"""The items table every recipe writes, as the after-recipe chain reads it: columns, field checks, typed rows, the export manifest reader (the lowest floor after the recipes, docs/splits.md)."""
