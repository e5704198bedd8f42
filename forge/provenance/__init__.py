"""Provenance: content hashes behind code versions and prompt hashes, what a row was built from, and
the environment a data dir was built with."""
