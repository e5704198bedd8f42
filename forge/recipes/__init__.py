"""Recipe logic, one package per paper: request building, parsing, programmatic checks, items."""
