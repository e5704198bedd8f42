"""Report tables (markdown) and plots (PNG) for one benchmark over all models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from forge.items.cells import as_list


def _fmt(v: float | None, ci: tuple[float | None, float | None] = (None, None)) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    s = f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    if ci[0] is not None and not (isinstance(ci[0], float) and np.isnan(ci[0])):
        s += f" [{ci[0]:.3g}, {ci[1]:.3g}]" if abs(v) < 10 else f" [{ci[0]:.1f}, {ci[1]:.1f}]"
    return s


def _n(r) -> str:
    """`` · n=…``: the items behind a value (``eval_scores.n``), when the row has one."""
    n = getattr(r, "n", None)
    return "" if n is None or (isinstance(n, float) and np.isnan(n)) else f" · n={int(n)}"


def main_table(scores: pd.DataFrame, metrics: list[str] | None = None) -> str:
    """models × (setting/metric) on slice all: value [95% CI] (coverage when < 1) · n."""
    df = scores[scores["slice"] == "all"]
    if metrics:
        df = df[df["metric"].isin(metrics)]
    if df.empty:
        return "_no scores_"
    cols = list(dict.fromkeys(f"{s} / {m}" for s, m in zip(df["setting"], df["metric"])))
    lines = ["| model | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for model, g in df.groupby("model"):
        cells = {}
        for r in g.itertuples():
            c = _fmt(r.value, (r.ci_low, r.ci_high))
            if r.coverage is not None and r.coverage < 1:
                c += f" (cov {r.coverage:.0%})"
            cells[f"{r.setting} / {r.metric}"] = c + _n(r)
        stub = " ⚠stub" if (g["backend"] == "stub").any() else ""
        lines.append(f"| {model}{stub} | " + " | ".join(cells.get(c, "–") for c in cols) + " |")
    return "\n".join(lines)


def slice_table(scores: pd.DataFrame, metric: str, prefix: str) -> str:
    """(model, setting) × the slices ``prefix=…`` of ``metric``: value [95% CI] · n (the items in
    the slice; a multi-label key's slices may sum past the item count, ``EvalSpec.multi_label``)."""
    df = scores[(scores["metric"] == metric) & scores["slice"].astype(str).str.startswith(prefix + "=")]
    if df.empty:
        return "_no scores_"
    cats = sorted(set(df["slice"].str.split("=", n=1).str[1]))
    lines = ["| model | setting | " + " | ".join(cats) + " |", "|---|---|" + "---|" * len(cats)]
    for (model, setting), g in df.groupby(["model", "setting"], sort=True):
        cells = {r.slice.split("=", 1)[1]: _fmt(r.value, (r.ci_low, r.ci_high)) + _n(r) for r in g.itertuples()}
        lines.append(f"| {model} | {setting} | " + " | ".join(cells.get(c, "–") for c in cats) + " |")
    return "\n".join(lines)


def bar_plot(scores: pd.DataFrame, metric: str, prefix: str, path: Path, title: str) -> Path | None:
    """Per-category bars (slices ``prefix=...``) for every model × setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = scores[(scores["metric"] == metric) & scores["slice"].str.startswith(prefix + "=")]
    if df.empty:
        return None
    df = df.assign(cat=df["slice"].str.split("=", n=1).str[1], who=df["model"] + " / " + df["setting"])
    cats = sorted(df["cat"].unique())
    whos = list(dict.fromkeys(df["who"]))
    fig, ax = plt.subplots(figsize=(max(5, 0.6 * len(cats) * max(1, len(whos)) ** 0.5 + 2), 3.5))
    width = 0.8 / len(whos)
    for k, who in enumerate(whos):
        sub = df[df["who"] == who].set_index("cat")
        vals = [sub["value"].get(c, np.nan) for c in cats]
        err = [
            [
                max(
                    0,
                    sub["value"].get(c, np.nan)
                    - (sub["ci_low"].get(c) if sub["ci_low"].get(c) is not None else np.nan),
                )
                for c in cats
            ],
            [
                max(
                    0,
                    (sub["ci_high"].get(c) if sub["ci_high"].get(c) is not None else np.nan)
                    - sub["value"].get(c, np.nan),
                )
                for c in cats
            ],
        ]
        ax.bar(
            np.arange(len(cats)) + k * width,
            vals,
            width,
            label=who,
            yerr=np.nan_to_num(np.array(err, dtype=float)),
            capsize=2,
        )
    ax.set_xticks(np.arange(len(cats)) + 0.4 - width / 2, cats, rotation=30, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def heatmap(matrix: np.ndarray, rows: list[str], cols: list[str], path: Path, title: str, center: bool = True) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1 + 0.6 * len(cols), 1 + 0.4 * max(len(rows), 1)))
    lim = float(np.nanmax(np.abs(matrix))) if matrix.size and np.isfinite(matrix).any() else 1.0
    im = ax.imshow(matrix, cmap="RdBu_r" if center else "viridis", vmin=-lim if center else 0, vmax=lim or 1)
    ax.set_xticks(range(len(cols)), cols, fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            if np.isfinite(matrix[i, j]):
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, fraction=0.04)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def list_col(v) -> list:
    return as_list(v)


def human_table(people: pd.DataFrame) -> str:
    """Each person's primary score (slice ``all``) with n and CI, the best marked, those below
    ``human.min_answers`` shown but not counted (forge/evals/per_person.py)."""
    df = people[people["primary"].astype(bool) & (people["slice"] == "all")] if len(people) else people
    if df.empty:
        return "_no human answers scored yet_"
    lines = ["| person | setting / metric | value [95% CI] | n | counted |", "|---|---|---|---|---|"]
    for r in df.sort_values(["setting", "value"], ascending=[True, False]).itertuples():
        mark = " (best)" if r.best else ""
        lines.append(
            f"| {r.person}{mark} | {r.setting} / {r.metric} | {_fmt(r.value, (r.ci_low, r.ci_high))} | {r.n} | "
            f"{'yes' if r.counted else 'no'} |"
        )
    return "\n".join(lines)


def judge_table(rows: pd.DataFrame) -> str:
    """The judge-validation figures (forge/evals/judge_validation.py): Fleiss' kappa between the
    people, of people and judge together (the figure a paper reports for its judge), each person's
    Cohen's kappa with the judge."""
    if rows.empty:
        return "_the judge has not been checked against people yet_"
    lines = ["| measure | person | kappa | answers | raters | judge |", "|---|---|---|---|---|---|"]
    for r in rows.itertuples():
        who = r.person if isinstance(r.person, str) else "–"
        lines.append(f"| {r.measure} | {who} | {_fmt(r.value)} | {r.units} | {r.raters} | {r.judge_model or '–'} |")
    note = next((n for n in rows["note"] if isinstance(n, str) and n), None)
    return "\n".join(lines) + (f"\n\n{note}" if note else "")
