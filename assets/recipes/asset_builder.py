"""One decorator for every recipe asset, so an asset's name is written once.

A recipe stage is a per-batch asset (``batches``, one run per backfill) whose key is its main
table; it declares that table's contract check and its ``reject_rate`` check
(``stage_check_specs``) and shows the table's schema (``table_metadata``). LLM stages run in
the ``llm`` pool with kind ``openai``, the others have kind ``python``. The decorator reads the
name from the function and fills all of that in; a stage states only what is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import dagster as dg

from assets.common import SINGLE_RUN, batches, stage_check_specs, table_metadata


def recipe_check_specs(
    name: str,
    tables: Sequence[str] = (),
    shared_tables: Sequence[str] = (),
    checks: Mapping[str, str] | None = None,
    reject_ceiling: float | None = None,
) -> list[dg.AssetCheckSpec]:
    """Contract checks of ``name`` and its further tables, ``reject_rate``, then the stage's own checks."""
    return [
        *stage_check_specs(name, [name, *tables, *shared_tables], reject_ceiling),
        *(dg.AssetCheckSpec(check, asset=name, description=text) for check, text in (checks or {}).items()),
    ]


def recipe_asset(
    *,
    group: str,
    deps: Sequence[str],
    code_version: str,
    description: str,
    llm: bool = False,
    kinds: Iterable[str] = (),
    tables: Sequence[str] = (),
    shared_tables: Sequence[str] = (),
    checks: Mapping[str, str] | None = None,
    reject_ceiling: float | None = None,
    **extra: Any,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """Decorate a recipe stage named after its main table.

    ``llm``: the stage calls a model (pool ``llm``, kind ``openai``; else kind ``python``).
    ``kinds``: further kinds (``parquet``). ``tables``: further tables the stage writes, each with
    its contract check and listed in the metadata (``hummus_regions``). ``shared_tables``: tables
    several stages append to (``maia_pool_stats``): checked here, listed on no stage. ``checks``:
    the stage's own non-blocking checks, name → description. ``reject_ceiling``: the stage's own
    ``reject_rate`` ceiling, for a filter meant to drop most inputs (default: config/quality.yaml's).
    ``extra`` goes to ``dg.asset``.
    """

    def build(fn: Callable[..., Any]) -> dg.AssetsDefinition:
        name = fn.__name__
        return dg.asset(
            group_name=group,
            kinds={"openai" if llm else "python", *kinds},
            **({"pool": "llm"} if llm else {}),
            partitions_def=batches,
            backfill_policy=SINGLE_RUN,
            deps=list(deps),
            code_version=code_version,
            check_specs=recipe_check_specs(name, tables, shared_tables, checks, reject_ceiling),
            metadata=table_metadata([name, *tables]),
            description=description,
            **extra,
        )(fn)

    return build
