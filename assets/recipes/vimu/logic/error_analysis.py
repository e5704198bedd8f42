"""ViMU error analyses of the structured tasks RM and SV (macro-5 options A–E):

* Fig. 7: PCA of each model's error signature. The paper does not define the signature beyond
  "structured error profiles" on the macro-5 tasks; we take, per task (RM, SV) and option
  letter, the false-positive rate (option chosen where the gold lacks it) and the false-negative
  rate (option missed where the gold has it): a 20-number vector per model, on the unguided
  setting (the one every model runs). PCA = SVD of the column-centred model × feature matrix;
  the explained-variance shares are the figure's axis labels.
* Fig. 10: guidance-induced shift in false-positive rate per category,
  ΔFPR = FPR(guided) − FPR(unguided), per model, task and option; the figure's mean marker is
  the mean over models.

A failed or unreadable reply is an empty selection, as the official scripts store it
(``selected_options: []``): it adds false negatives, no false positives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from forge.items.cells import as_object

LETTERS = ("A", "B", "C", "D", "E")
TASKS = ("RM", "SV")
UNGUIDED, GUIDED = "unguided", "guided"


def option_error_rates(preds: pd.DataFrame) -> pd.DataFrame:
    """Per model × setting × task (RM, SV) × option: FPR, FNR and their denominators."""
    cols = ["model", "setting", "task", "option", "fpr", "fnr", "negatives", "positives"]
    if preds.empty:
        return pd.DataFrame(columns=cols)
    df = preds[preds["category"].isin(TASKS)]
    if "variant" in df:  # circular rotations are not evaluated on ViMU; keep the asked order only
        df = df[df["variant"] == 0]
    out = []
    for (model, setting, task), g in df.groupby(["model", "setting", "category"], sort=True):
        details = [as_object(d) or {} for d in g["detail"]]
        # a failed call has no parsed sets: its gold comes from the row (as the scorer reads it)
        golds = g["gold"] if "gold" in g else [None] * len(g)
        gold = [
            set(d.get("gold_set") or [x.strip() for x in str(gc or "").split(",") if x.strip()])
            for d, gc in zip(details, golds, strict=True)
        ]
        pred = [set(d.get("pred_set") or []) for d in details]
        for opt in LETTERS:
            neg = [p for gs, p in zip(gold, pred, strict=True) if opt not in gs]
            pos = [p for gs, p in zip(gold, pred, strict=True) if opt in gs]
            out.append(
                {
                    "model": model,
                    "setting": setting,
                    "task": task,
                    "option": opt,
                    "fpr": sum(opt in p for p in neg) / len(neg) if neg else np.nan,
                    "fnr": sum(opt not in p for p in pos) / len(pos) if pos else np.nan,
                    "negatives": len(neg),
                    "positives": len(pos),
                }
            )
    return pd.DataFrame(out, columns=cols)


def error_signatures(rates: pd.DataFrame, setting: str = UNGUIDED) -> pd.DataFrame:
    """Models × features (``<task>_<option>_fpr`` / ``_fnr``) of one setting. A rate the items
    leave undefined for every model (an option that is never, or always, gold) is dropped; a
    model still missing a rate (e.g. without one of the tasks) is left out: PCA needs every
    coordinate."""
    r = rates[rates["setting"] == setting]
    if r.empty:
        return pd.DataFrame()
    long = pd.concat([r.assign(feature=r["task"] + "_" + r["option"] + "_" + k, value=r[k]) for k in ("fpr", "fnr")])
    wide = long.pivot_table(index="model", columns="feature", values="value", aggfunc="first", dropna=False)
    want = [f"{t}_{o}_{k}" for t in TASKS for o in LETTERS for k in ("fpr", "fnr")]
    return wide.reindex(columns=want).dropna(axis=1, how="all").dropna(axis=0, how="any")


def signature_pca(signatures: pd.DataFrame) -> tuple[pd.DataFrame, list[float]]:
    """(model → PC1, PC2, explained-variance share of PC1 and PC2). Needs ≥ 2 models."""
    if len(signatures) < 2:
        return pd.DataFrame(columns=["model", "pc1", "pc2"]), []
    x = signatures.to_numpy(dtype=float)
    x = x - x.mean(axis=0)
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    var = s**2
    share = (var / var.sum()).tolist() if var.sum() > 0 else [0.0] * len(var)
    coords = u * s
    pc2 = coords[:, 1] if coords.shape[1] > 1 else np.zeros(len(x))
    frame = pd.DataFrame({"model": signatures.index, "pc1": coords[:, 0], "pc2": pc2})
    return frame, (share + [0.0, 0.0])[:2]


def delta_fpr(rates: pd.DataFrame) -> pd.DataFrame:
    """Per model × task × option: FPR unguided, guided and ΔFPR = guided − unguided (models
    with both settings only)."""
    cols = ["model", "task", "option", "fpr_unguided", "fpr_guided", "delta_fpr"]
    u = rates[rates["setting"] == UNGUIDED].set_index(["model", "task", "option"])["fpr"]
    g = rates[rates["setting"] == GUIDED].set_index(["model", "task", "option"])["fpr"]
    both = pd.concat({"fpr_unguided": u, "fpr_guided": g}, axis=1).dropna(how="any")
    if both.empty:
        return pd.DataFrame(columns=cols)
    both["delta_fpr"] = both["fpr_guided"] - both["fpr_unguided"]
    return both.reset_index()[cols]


def pca_plot(coords: pd.DataFrame, share: list[float], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.scatter(coords["pc1"], coords["pc2"])
    for r in coords.itertuples():
        ax.annotate(str(r.model), (r.pc1, r.pc2), fontsize=7)
    ax.set_xlabel(f"PC1 ({share[0]:.1%})")
    ax.set_ylabel(f"PC2 ({share[1]:.1%})")
    ax.set_title("ViMU Fig. 7: error signatures (RM, SV), PCA", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def delta_fpr_plot(delta: pd.DataFrame, path: Path) -> Path:
    """Points per model, the mean as a marker, per task × option (Fig. 10's layout as strips)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k, task in enumerate(TASKS):
        for j, opt in enumerate(LETTERS):
            vals = delta[(delta["task"] == task) & (delta["option"] == opt)]["delta_fpr"].to_numpy(dtype=float)
            x = j + (k - 0.5) * 0.35
            color = "tab:green" if task == "RM" else "tab:red"
            ax.scatter(np.full(len(vals), x), vals, s=10, color=color, alpha=0.6, label=task if j == 0 else None)
            if len(vals):
                ax.scatter([x], [vals.mean()], marker="D", color="black", s=18)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xticks(range(len(LETTERS)), LETTERS)
    ax.set_ylabel("ΔFPR (guided − unguided)")
    ax.set_title("ViMU Fig. 10: guidance-induced FPR shift", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def paper_figures(preds: pd.DataFrame, out_dir: Path) -> tuple[str, list[Path]]:
    """Figs. 7 and 10 for the paper report: Markdown (coordinates, ΔFPR table) and PNGs."""
    rates = option_error_rates(preds)
    parts, paths = [], []
    coords, share = signature_pca(error_signatures(rates))
    parts.append("**Fig. 7: PCA of error signatures (RM, SV; unguided)**\n")
    if len(coords):
        paths.append(pca_plot(coords, share, out_dir / "fig7_error_signature_pca.png"))
        parts.append(f"PC1 {share[0]:.1%}, PC2 {share[1]:.1%} of the variance\n")
        parts.append(coords.round(3).to_markdown(index=False))
    else:
        parts.append("_needs at least two models with RM and SV predictions (unguided)_")
    delta = delta_fpr(rates)
    parts.append("\n**Fig. 10: ΔFPR = FPR(guided) − FPR(unguided) per category**\n")
    if len(delta):
        paths.append(delta_fpr_plot(delta, out_dir / "fig10_delta_fpr.png"))
        mean = (
            delta.groupby(["task", "option"], as_index=False)["delta_fpr"]
            .mean()
            .rename(columns={"delta_fpr": "mean over models"})
        )
        piv = delta.pivot_table(index=["task", "option"], columns="model", values="delta_fpr").reset_index()
        parts.append(piv.merge(mean, on=["task", "option"]).round(3).to_markdown(index=False))
    else:
        parts.append("_needs a model evaluated in both the guided and the unguided setting_")
    return "\n".join(parts), paths
