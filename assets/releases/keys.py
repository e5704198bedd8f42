"""Names shared by the release assets and their neighbours (splits, sensor): which benchmarks
have an importer (``PaperHooks.parse_release``), the asset keys and the dynamic partitions
(one partition per release)."""

from __future__ import annotations

import dagster as dg

from forge.releases.config import importing_papers

RELEASE_PAPERS = importing_papers()


def release_key(paper: str) -> str:
    return f"{paper}_release"


def report_key(paper: str) -> str:
    return f"{paper}_release_report"


def release_deps(paper: str) -> list[str]:
    """Upstream keys for ``<paper>_splits``: the importer writes into ``<paper>_items`` too."""
    return [release_key(paper)] if paper in RELEASE_PAPERS else []


PARTITIONS = {p: dg.DynamicPartitionsDefinition(name=f"{p}_releases") for p in RELEASE_PAPERS}
