"""An edited revision re-enters the text-only probe (``forge/gates/blind.py``), Dagster-free.

The field contract and the box check run inside ``items.apply_edits``; the probe needs the LLM
engine, so ``<b>_review_results`` runs it on the multiple-choice items an edit changed, with the
benchmark's own gate settings (``config/splits.yaml`` ``blind``) and the same prompt, through the
engine's cache (a re-read pays nothing). Its figures go into the applying verdict row's
``edit_blind`` (with the revision they were measured on); ``gate.apply_revisions`` then copies them
onto the revision (``blind_*`` columns the export carries) or, under the opt-in
``blind.action: drop``, refuses a flagged edit (the original stays). Units are single items here
(a pool-level verdict would need the whole pool re-probed).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from forge.gates import blind
from forge.items.fields import is_mcq
from forge.llm.prompts import load_prompt
from forge.review.items import revision
from forge.splits.config import StageSettings

FIGURES = ("trials", "correct", "chance", "p_value", "flagged")


@dataclass(frozen=True)
class Reprobe:
    """What the probe needs, handed in by the asset: the benchmark's gate settings
    (``forge.splits.config.StageSettings``), the engine factory (called only when something is
    probed) and the blind prompt file (``forge.gates.stages.BLIND_PROMPT``, which the asset also
    versions)."""

    settings: StageSettings
    engine_factory: Callable[[], Any]
    prompt: Path


def edited(items: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """Items whose current revision an applied, live edit made."""
    v = verdicts[(verdicts["edit_status"] == "applied") & ~verdicts["stale"].astype(bool)]
    if v.empty or items.empty:
        return items.iloc[0:0]
    made = set(zip(v["item_id"].astype(str), v["new_revision"].astype(str), strict=True))
    keep = [(str(r["item_id"]), revision(r)) in made for r in items.to_dict("records")]
    return items[keep]


def reprobe(
    items: pd.DataFrame, verdicts: pd.DataFrame, how: Reprobe, stage: str, partition: str
) -> tuple[pd.DataFrame, Any]:
    """``verdicts`` with ``edit_blind`` filled for the edits it probed, and the engine (None when
    nothing was probed: probe off, or no edited multiple-choice item)."""
    bc = how.settings.gates.blind
    todo = edited(items, verdicts)
    todo = todo[todo.apply(is_mcq, axis=1)] if len(todo) else todo
    if not bc.enabled or todo.empty:
        return verdicts, None
    engine = how.engine_factory()
    scores = blind.probe(engine, stage, partition, todo, load_prompt(how.prompt), bc).scores
    rev = {str(r["item_id"]): revision(r) for r in todo.to_dict("records")}
    out = verdicts.copy()
    out["edit_blind"] = out["edit_blind"].astype(object)  # all-null reads back as float64
    for idx, row in out[out["edit_status"] == "applied"].iterrows():
        i = str(row["item_id"])
        if i in scores and rev.get(i) == row["new_revision"]:
            s = scores[i]
            fig = {f: getattr(s, f) for f in FIGURES}
            out.at[idx, "edit_blind"] = json.dumps({"revision": rev[i], "drop": bool(bc.drop and s.flagged), **fig})
    return out, engine
