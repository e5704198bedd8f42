"""Where the project's data lives: tables, media and the DuckDB catalog."""

from __future__ import annotations

import dagster as dg

from forge.storage import TableStore
from forge.storage.location import configured_location


class StorageResource(dg.ConfigurableResource):
    """The data directory (default ``./data``; ``SUBTEXT_DATA_DIR`` overrides it), or an object-storage
    URL (``SUBTEXT_DATA_URL=s3://bucket/prefix``, docs/operations.md "Object storage")."""

    data_dir: str = "data"

    @property
    def store(self) -> TableStore:
        return TableStore(self.data_dir)


def default_storage() -> StorageResource:
    return StorageResource(data_dir=configured_location())


def resources() -> dict[str, StorageResource]:
    return {"storage": default_storage()}
