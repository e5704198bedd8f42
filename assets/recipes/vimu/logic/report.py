"""ViMU report: option affinity (§4, Fig. 9; App. H) and label co-occurrence (Fig. 8) plots,
and the official cross-model OE table (scripts/02-vimu_oe_score.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from forge.evals.report import heatmap
from forge.evals.scorers import cooccurrence
from forge.items.cells import as_object

from .scoring import vimu_oe_intersection, vimu_oe_normalised


def plots(scores: pd.DataFrame, preds: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Option-affinity heatmaps (models×settings × options, per task) and label co-occurrence
    matrices (gold, and each model's predictions) — ViMU Figs. 8 and 9."""
    letters = ["A", "B", "C", "D", "E"]
    paths = []
    aff = scores[scores["metric"] == "option_affinity"]
    for task in ("RM", "SV", "EG"):
        sub = aff[aff["slice"].str.startswith(f"task={task},")]
        if sub.empty:
            continue
        sub = sub.assign(opt=sub["slice"].str.rsplit("=", n=1).str[1], who=sub["model"] + " / " + sub["setting"])
        piv = sub.pivot_table(index="who", columns="opt", values="value").reindex(columns=letters)
        paths.append(
            heatmap(
                piv.to_numpy(dtype=float),
                list(piv.index),
                letters,
                out_dir / f"affinity_{task}.png",
                f"ViMU {task}: option affinity (pred − gold prevalence)",
            )
        )
    ok = preds[(preds["status"] == "ok") & preds["category"].isin(["EG", "RM", "SV"])] if len(preds) else preds
    for task in ("RM", "SV", "EG"):
        t = ok[ok["category"] == task] if len(ok) else ok
        if not len(t):
            continue
        details = [json.loads(d) if isinstance(d, str) else d for d in t["detail"]]
        gold = [d.get("gold_set", []) for d in details]
        first = t.drop_duplicates("item_id").index
        gold_once = [d.get("gold_set", []) for d, keep in zip(details, t.index.isin(first)) if keep]
        paths.append(
            heatmap(
                cooccurrence(gold_once, letters),
                letters,
                letters,
                out_dir / f"cooc_{task}_gold.png",
                f"ViMU {task}: gold co-occurrence",
                center=False,
            )
        )
        for (model, setting), g in t.assign(_d=details).groupby(["model", "setting"]):
            pred = [d.get("pred_set", []) for d in g["_d"]]
            name = f"cooc_{task}_{model}_{setting}".replace("/", "_")
            paths.append(
                heatmap(
                    cooccurrence(pred, letters),
                    letters,
                    letters,
                    out_dir / f"{name}.png",
                    f"ViMU {task}: {model} / {setting}",
                    center=False,
                )
            )
        del gold
    return paths


def oe_cross_model(preds: pd.DataFrame) -> pd.DataFrame:
    """ViMU OE compared across models as 02-vimu_oe_score.py does: per setting, keep only the
    videos (``source_item_id``) judged for every model, then each model's mean raw total and
    (mean + 6) / 15 × 100. ``preds``: eval_predictions rows of several models (``detail`` json)."""
    out = []
    oe = preds[(preds["benchmark"] == "vimu") & (preds["category"] == "OE")]
    for setting, g in oe.groupby("setting"):
        rows = [
            (m, v, (as_object(d) or {}).get("oe_total"))
            for m, v, d in zip(g["model"], g["source_item_id"], g["detail"])
        ]
        common = vimu_oe_intersection(rows)
        for model, totals in common.items():
            raw = float(np.mean(totals)) if totals else float("nan")
            out.append(
                {
                    "setting": setting,
                    "model": model,
                    "n_videos": len(totals),
                    "avg_raw_score": raw,
                    "OE": vimu_oe_normalised(raw) * 100.0 if totals else float("nan"),
                }
            )
    return pd.DataFrame(out, columns=["setting", "model", "n_videos", "avg_raw_score", "OE"])


def prediction_tables(scores: pd.DataFrame, preds: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Report tables that need the predictions: OE on the videos judged for every model."""
    common = oe_cross_model(preds) if len(preds) else pd.DataFrame()
    return {"oe_common_videos": common.round(2)} if len(common) else {}
