"""jobs of Subtext Forge; each stage module exposes a module-level `defs`."""
