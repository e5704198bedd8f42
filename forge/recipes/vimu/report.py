"""ViMU report plots: option affinity (§4, Fig. 9; App. H) and label co-occurrence (Fig. 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from forge.evals.report import heatmap
from forge.evals.scorers import cooccurrence


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
        paths.append(heatmap(piv.to_numpy(dtype=float), list(piv.index), letters, out_dir / f"affinity_{task}.png",
                             f"ViMU {task}: option affinity (pred − gold prevalence)"))
    ok = preds[(preds["status"] == "ok") & preds["category"].isin(["EG", "RM", "SV"])] if len(preds) else preds
    for task in ("RM", "SV", "EG"):
        t = ok[ok["category"] == task] if len(ok) else ok
        if not len(t):
            continue
        details = [json.loads(d) if isinstance(d, str) else d for d in t["detail"]]
        gold = [d.get("gold_set", []) for d in details]
        first = t.drop_duplicates("item_id").index
        gold_once = [d.get("gold_set", []) for d, keep in zip(details, t.index.isin(first)) if keep]
        paths.append(heatmap(cooccurrence(gold_once, letters), letters, letters, out_dir / f"cooc_{task}_gold.png",
                             f"ViMU {task}: gold co-occurrence", center=False))
        for (model, setting), g in t.assign(_d=details).groupby(["model", "setting"]):
            pred = [d.get("pred_set", []) for d in g["_d"]]
            name = f"cooc_{task}_{model}_{setting}".replace("/", "_")
            paths.append(heatmap(cooccurrence(pred, letters), letters, letters, out_dir / f"{name}.png",
                                 f"ViMU {task}: {model} / {setting}", center=False))
        del gold
    return paths
