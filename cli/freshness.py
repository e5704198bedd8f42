"""Which assets a build may leave alone: those Dagster reports Synced (``StaleStatus.FRESH``).

Data versions come from content (``forge.provenance.versioning.rows_version``) and code versions from
what decides an asset's output, so an asset is FRESH when it was materialized with its current
code version from the data versions its parents have now. ``cli.build --only-stale`` skips
those; an asset without parents (``sources``, a release import) reads the outside world and
always runs. An asset whose parent runs in the same segment waits: the parent runs first, then
it is checked again (a parent that wrote the same rows leaves it Synced).
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from cli.dagster_internals import CachingStaleStatusResolver, LoadingContext, StaleStatus


class _Loading(LoadingContext):
    """The loading context a status resolver needs outside a UI request (one per check)."""

    def __init__(self, instance: dg.DagsterInstance):
        self._instance, self._loaders = instance, {}

    @property
    def instance(self) -> dg.DagsterInstance:
        return self._instance

    @property
    def loaders(self) -> dict:
        return self._loaders


def fresh_keys(
    instance: dg.DagsterInstance, graph, keys: Iterable[dg.AssetKey], partition_keys: list[str] | None = None
) -> tuple[set[dg.AssetKey], set[dg.AssetKey]]:
    """Of ``keys`` (in dependency order): those FRESH in every partition the run would cover, and
    those FRESH now but waiting for a parent among ``keys`` that runs (to be checked again after it)."""
    resolver = CachingStaleStatusResolver(instance, graph, _Loading(instance))
    keys = list(keys)
    pending = set(keys)
    fresh: set[dg.AssetKey] = set()
    waiting: set[dg.AssetKey] = set()
    for key in keys:
        node = graph.get(key)
        if not node.parent_keys:  # reads the outside world: always runs
            continue
        parts: list[str | None] = [None]
        if node.partitions_def is not None:
            parts = list(partition_keys or node.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
        if not (parts and all(resolver.get_status(key, p) == StaleStatus.FRESH for p in parts)):
            continue
        if any(p in pending and p not in fresh for p in node.parent_keys):
            waiting.add(key)
        else:
            fresh.add(key)
    return fresh, waiting
