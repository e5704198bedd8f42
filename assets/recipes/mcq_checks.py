"""Asset checks for any table of multiple-choice benchmark items (issue 5, item 11).

``mcq_asset_checks("vague_items")`` returns one multi-asset check definition with three
checks over the table's common item columns (``options``, ``option_types``, ``answer``):

* ``mcq_position_balance``: answers per letter; fails when a letter's share deviates
  from uniform by more than ``max_position_deviation`` (only judged from ``min_items``).
* ``mcq_length_bias``: share of items whose correct option is strictly the longest;
  fails when it exceeds chance by more than ``max_length_excess``.
* ``mcq_duplicate_options``: items with equal or near-equal options; fails above
  ``max_duplicate_rate``.

All three are WARN checks with their figures in metadata: they describe a set of items,
they do not block the splits built from it. The logic is in ``forge.checks.mcq``.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
import pandas as pd

from forge.checks import mcq
from resources.storage import StorageResource


def _single_answer_rows(df: pd.DataFrame) -> pd.DataFrame:
    keep = df["options"].map(
        lambda o: o is not None and not isinstance(o, str) and hasattr(o, "__len__") and len(o) > 1
    ) & df["answer"].map(lambda a: isinstance(a, str) and "," not in a and len(a.strip()) == 1)
    return df[keep]


def mcq_figures(df: pd.DataFrame, duplicate_threshold: float = 0.9) -> dict[str, Any]:
    """Position balance, length bias and duplicate figures of an items frame (single-answer MCQs)."""
    rows = _single_answer_rows(df)
    out: dict[str, Any] = {"items": len(rows)}
    if rows.empty:
        return out
    k = int(rows["options"].map(len).max())
    pb = mcq.position_balance(rows["answer"].tolist(), k)
    lb = mcq.length_bias((list(o), mcq.letter_index(a)) for o, a in zip(rows["options"], rows["answer"]))
    ids = rows["item_id"] if "item_id" in rows else pd.Series(range(len(rows)))
    ds = mcq.duplicate_stats(zip(ids, [list(o) for o in rows["options"]]), duplicate_threshold)
    out.update(position=pb, length=lb, duplicates=ds)
    return out


def mcq_asset_checks(
    asset: str | dg.AssetKey,
    table: str | None = None,
    *,
    max_position_deviation: float = 0.15,
    max_length_excess: float = 0.15,
    max_duplicate_rate: float = 0.0,
    duplicate_threshold: float = 0.9,
    min_items: int = 20,
) -> list[dg.AssetChecksDefinition]:
    """Position-balance, length-bias and duplicate-option checks on ``asset``'s items table."""
    key = dg.AssetKey(asset) if isinstance(asset, str) else asset
    table = table or key.path[-1]
    specs = [
        dg.AssetCheckSpec(
            "mcq_position_balance",
            asset=key,
            description=f"Correct-option position counts; max share deviation from uniform ≤ {max_position_deviation}.",
        ),
        dg.AssetCheckSpec(
            "mcq_length_bias",
            asset=key,
            description=f"Share of items whose correct option is the longest ≤ chance + {max_length_excess}.",
        ),
        dg.AssetCheckSpec(
            "mcq_duplicate_options",
            asset=key,
            description=f"Share of items with (near-)duplicate options (similarity ≥ {duplicate_threshold}) ≤ {max_duplicate_rate}.",
        ),
    ]

    @dg.multi_asset_check(specs=specs, name=f"{table}_mcq_checks")
    def _checks(storage: StorageResource):
        store = storage.store
        df = store.read(table) if store.exists(table) else pd.DataFrame(columns=["item_id", "options", "answer"])
        fig = mcq_figures(df, duplicate_threshold)
        n = fig["items"]
        judged = n >= min_items
        warn = dg.AssetCheckSeverity.WARN
        if n == 0:
            for spec in specs:
                yield dg.AssetCheckResult(
                    check_name=spec.name,
                    asset_key=key,
                    passed=True,
                    severity=warn,
                    metadata={"items": 0, "note": "no single-answer MCQ items"},
                )
            return
        pb, lb, ds = fig["position"], fig["length"], fig["duplicates"]
        yield dg.AssetCheckResult(
            check_name="mcq_position_balance",
            asset_key=key,
            severity=warn,
            passed=(not judged) or pb.max_deviation <= max_position_deviation,
            metadata={
                "items": n,
                "counts": dg.MetadataValue.json(pb.counts),
                "max_deviation": round(pb.max_deviation, 4),
                "expected_share": round(pb.expected_share, 4),
                "chi2": round(pb.chi2, 4),
                "p_value": round(pb.p_value, 4),
                "judged": judged,
                "failure_rate": round(pb.max_deviation, 4),
            },
        )
        yield dg.AssetCheckResult(
            check_name="mcq_length_bias",
            asset_key=key,
            severity=warn,
            passed=(not judged) or lb.excess <= max_length_excess,
            metadata={
                "items": n,
                "correct_longest": lb.correct_longest,
                "share_longest": round(lb.share_longest, 4),
                "share_shortest": round(lb.share_shortest, 4),
                "chance": round(lb.chance, 4),
                "excess": round(lb.excess, 4),
                "judged": judged,
            },
        )
        yield dg.AssetCheckResult(
            check_name="mcq_duplicate_options",
            asset_key=key,
            severity=warn,
            passed=ds.rate <= max_duplicate_rate,
            metadata={
                "items": n,
                "items_with_duplicates": ds.items_with_duplicates,
                "items_with_exact_duplicates": ds.items_with_exact,
                "failure_rate": round(ds.rate, 4),
                "examples": dg.MetadataValue.json(ds.examples),
            },
        )

    return [_checks]
