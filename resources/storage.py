"""Where the project's data lives: tables, media and the DuckDB catalog."""

from __future__ import annotations

import os

import dagster as dg

from forge.storage import TableStore


class StorageResource(dg.ConfigurableResource):
    """The data directory (default ``./data``; ``SUBTEXT_DATA_DIR`` overrides it)."""

    data_dir: str = "data"

    @property
    def store(self) -> TableStore:
        return TableStore(self.data_dir)


def default_storage() -> StorageResource:
    return StorageResource(data_dir=os.environ.get("SUBTEXT_DATA_DIR", "data"))


def resources() -> dict[str, StorageResource]:
    return {"storage": default_storage()}
