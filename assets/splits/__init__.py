"""Splits, quality gates and exports: one identical asset set per registered benchmark
(see factory.py). Group ``splits``; for each ``<name>_splits → <name>_gated → <name>_export``.
"""

from __future__ import annotations

import dagster as dg

from assets.splits.factory import benchmark_defs
from forge.benchmarks import registry
from forge.storage import register_view

# Derived catalog views (docs/splits.md has example queries).
register_view(
    "split_summary",
    "select benchmark, split, category, count(*) as items, count(distinct group_id) as groups "
    "from splits group by all order by all",
)
register_view(
    "gate_summary",
    "select benchmark, split, status, coalesce(reason, '') as reason, count(*) as items, "
    "round(sum(blind_correct) / nullif(sum(blind_trials), 0), 4) as blind_accuracy "
    "from gate_results group by all order by all",
)
register_view(
    "latest_exports",
    "select * from exports qualify row_number() over (partition by benchmark order by version_number desc) = 1",
)

defs = dg.Definitions.merge(*(benchmark_defs(spec) for spec in registry.specs()))
