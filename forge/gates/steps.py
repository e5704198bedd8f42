"""The steps of the gate stage (``forge.gates.stages.run_gates`` runs them in order).

Items of a published release (``origin = imported``) reach export as released: no step drops,
re-letters or de-duplicates them unless a named opt-in (``gates.imported.*``, ``ImportedPolicy``)
asks for it; a missing media file is the one exception (the item cannot be shown or exported).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BlindAction
from forge.checks import mcq
from forge.gates import checks as sg
from forge.gates.blind import Probe
from forge.items import fields
from forge.splits.config import GateConfig

Status = dict[str, tuple[str, str]]  # item_id → (reason, detail) of a dropped item


@dataclass
class FieldStep:
    status: Status
    dups: dict[str, str]  # dropped duplicate → its kept twin
    member_dups: int  # equal items inside units that differ as a whole (kept)
    dup_opts: Any  # mcq.duplicate_stats
    imported_kept: Status = field(default_factory=dict)  # problems of imported items, reported, not dropped


def field_and_duplicates(
    df: pd.DataFrame, units: dict[str, str], imported: set[str], gcfg: GateConfig, data_dir: Path
) -> FieldStep:
    """Empty fields / contract / media problems, whole units, then duplicate items."""
    status: Status = {}
    kept_problems: Status = {}
    media_dir = data_dir if gcfg.check_media_files else None
    for _, r in df.iterrows():
        i = r["item_id"]
        if i in imported and not gcfg.imported.drop_field_problems:
            p = fields.media_problem(r, media_dir)  # the release's text is as published; a missing file is not
            if p:
                status[i] = p
            elif fields.field_problem(r, None):
                kept_problems[i] = fields.field_problem(r, None)
            continue
        p = fields.field_problem(r, media_dir)
        if p:
            status[i] = p
    status |= sg.whole_units(status, units)
    alive = df[~df["item_id"].isin(status)]
    pool = alive if gcfg.imported.drop_duplicates else alive[~alive["item_id"].isin(imported)]
    dups = sg.duplicate_units(pool, units) if units else sg.duplicate_items(pool)
    for i, kept_twin in dups.items():
        what = f"its unit {units[i]} equals the unit of" if i in units else "same question, options and media as"
        status[i] = ("duplicate_item", f"{what} {kept_twin}")
    member_dups = len(sg.duplicate_items(pool)) - len(dups) if units else 0
    alive = df[~df["item_id"].isin(status)]
    dup_opts = mcq.duplicate_stats(
        ((r["item_id"], list(r["options"])) for _, r in alive.iterrows() if fields.is_mcq(r)),
        gcfg.duplicate_option_threshold,
    )
    return FieldStep(status, dups, member_dups, dup_opts, kept_problems)


def blind_drops(probe: Probe, gcfg: GateConfig, imported: set[str]) -> Status:
    """Items dropped as text-solvable: only with the opt-in ``blind.action: drop``, never on a stub
    solver's random answers, and imported items only with ``gates.imported.drop_blind_solvable``."""
    if gcfg.blind.action != BlindAction.DROP or probe.backend == "stub":
        return {}
    return {
        s.item_id: (
            "blind_solvable",
            f"{s.correct}/{s.trials} correct without the image (chance {s.chance:.4g}, p={s.p_value:.4g})",
        )
        for s in probe.scores.values()
        if s.flagged and (s.item_id not in imported or gcfg.imported.drop_blind_solvable)
    }


@dataclass
class PositionStep:
    kept: pd.DataFrame
    moved: int
    before: list[sg.PositionFigure]
    after: list[sg.PositionFigure]
    imported: list[sg.PositionFigure]  # imported items' positions as released (never moved by default)


def positions(kept: pd.DataFrame, imported: set[str], gcfg: GateConfig, seed: object) -> PositionStep:
    """Re-balance correct-option positions per split (never for fixed-order options, never for
    imported items unless ``gates.imported.rebalance_positions``)."""
    fixed = kept["item_id"].isin(imported) & (not gcfg.imported.rebalance_positions)
    movable = kept[~fixed]
    before = sg.position_figures(movable, gcfg.position_tolerance)
    moved = 0
    if gcfg.rebalance_positions and len(movable):
        movable, moved = sg.rebalance_positions(movable, gcfg.position_tolerance, seed=seed)
        kept = pd.concat([movable, kept[fixed]]).loc[kept.index]
    after = sg.position_figures(movable, gcfg.position_tolerance)
    return PositionStep(kept, moved, before, after, sg.position_figures(kept[fixed], gcfg.position_tolerance))


def result_rows(
    name: str, df: pd.DataFrame, status: Status, probe: Probe, units: dict[str, str], kept: pd.DataFrame
) -> list[dict[str, Any]]:
    """One ``gate_results`` row per split item: kept or dropped, why, and its blind figures."""
    resh = dict(zip(kept["item_id"], kept["reshuffled"]))
    rows = []
    for _, r in df.iterrows():
        s = probe.scores.get(r["item_id"])
        st = status.get(r["item_id"])
        rows.append(
            {
                "benchmark": name,
                "item_id": r["item_id"],
                "split": r["split"],
                "category": r["category"],
                "status": "dropped" if st else "kept",
                "reason": st[0] if st else None,
                "detail": st[1] if st else None,
                "mcq": bool(fields.is_mcq(r)),
                "unit_id": units.get(r["item_id"]),
                "blind_trials": s.trials if s else None,
                "blind_correct": s.correct if s else None,
                "blind_failed": s.failed if s else None,
                "blind_chance": s.chance if s else None,
                "blind_p_value": s.p_value if s else None,
                "blind_flagged": s.flagged if s else None,
                "blind_model": probe.model if s else None,
                "blind_backend": probe.backend if s else None,
                "blind_prompt_hash": probe.prompt_hash if s else None,
                "reshuffled": bool(resh.get(r["item_id"], False)),
                "backend": r["backend"],
            }
        )
    return rows


def with_blind_columns(kept: pd.DataFrame, probe: Probe) -> pd.DataFrame:
    """The probe's figures as columns of the kept items (a user filters on them)."""
    sc = probe.scores

    def col(attr: str) -> pd.Series:
        return kept["item_id"].map(lambda i: getattr(sc[i], attr) if i in sc else None)

    return kept.assign(
        blind_trials=col("trials"),
        blind_correct=col("correct"),
        blind_chance=col("chance"),
        blind_p_value=col("p_value"),
        blind_flagged=col("flagged"),
    )
