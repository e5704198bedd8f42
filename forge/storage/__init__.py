"""Tables and their catalog: Parquet partitions written atomically, the DuckDB catalog, table contracts,
reject logs and data-dir paths (docs/conventions.md "Tables")."""

from forge.storage.catalog import open_catalog, refresh_catalog, register_view
from forge.storage.rejects import RejectLog
from forge.storage.tables import UNPARTITIONED, TableStore, TableWrite, quote_ident, quote_literal, safe_name

__all__ = [
    "RejectLog",
    "TableStore",
    "TableWrite",
    "UNPARTITIONED",
    "open_catalog",
    "quote_ident",
    "quote_literal",
    "refresh_catalog",
    "register_view",
    "safe_name",
]
