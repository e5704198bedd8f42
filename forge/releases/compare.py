"""Side by side: the statistics of a built set next to each imported release of the same paper.

Sides: ``built`` (items the recipe generated: ``origin`` null or ``generated``) and one side
per imported release. Figures per side (rows of ``side_by_side``):

* items, items per task; category distribution (share of items per category) and, for
  labelled tasks, the gold-label distribution (Hummus verdicts, MAIA true-statement
  position …);
* option position: share of multiple-choice items whose correct option is each letter;
  length bias: share whose correct option is strictly the longest minus chance (mean 1/k);
* question length: mean tokens per question (tokenised in the side's language);
* answer pools (open-ended items with ≥ 2 references, MAIA's 8-answer pools) and true-statement pools
  (statement-verification items of one question): mean pairwise lexical overlap and
  content-word TTR per pool, as MAIA reports them (App. A.4 / A.6), in the side's language.

``plot`` draws category shares, correct-position shares and question-length distributions per
side into one PNG.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.checks import mcq
from forge.checks.text import pool_stats, tokens
from forge.items.cells import as_list, as_object, missing

BUILT = "built"


def sides(items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``built`` and one frame per imported release (in name order)."""
    if items.empty:
        return {}
    origin = items["origin"] if "origin" in items else pd.Series([None] * len(items), index=items.index)
    imported = origin.eq("imported")
    out: dict[str, pd.DataFrame] = {}
    if (~imported).any():
        out[BUILT] = items[~imported]
    if imported.any():
        for name, sub in items[imported].groupby("release", sort=True, dropna=False):
            out[f"release:{name}"] = sub
    return out


def _language(df: pd.DataFrame, languages: Mapping[str, str], side: str) -> str:
    return languages.get(side) or next(
        (str(e["language"]) for e in map(as_object, df.get("extra", [])) if e.get("language")), "en"
    )


def side_stats(df: pd.DataFrame, lang: str = "en", threshold: float = 0.5) -> dict[str, float | int | str]:
    """Every figure of one side (see the module docstring)."""
    n = len(df)
    s: dict[str, Any] = {"items": n}
    for task, k in df["task"].value_counts().sort_index().items():
        s[f"task/{task}"] = int(k)
    for cat, k in df["category"].fillna("(none)").value_counts().sort_index().items():
        s[f"category/{cat}"] = round(k / n, 4)
    if "labels" in df:
        verdicts = Counter(as_object(v).get("verdict") for v in df.loc[df["task"] == "classification", "labels"])
        total = sum(verdicts.values())
        for v, k in sorted((k, v) for k, v in verdicts.items() if k):
            s[f"label/{v}"] = round(k / total, 4)
    mcq_rows = [(list(as_list(o)), a) for o, a in zip(df["options"], df["answer"]) if len(as_list(o)) >= 2]
    if mcq_rows:
        kmax = max(len(o) for o, _ in mcq_rows)
        idx = []
        for o, a in mcq_rows:
            try:
                idx.append((o, mcq.letter_index(str(a).split(",")[0])))
            except (ValueError, IndexError):
                continue
        pos = mcq.position_balance([i for _, i in idx], kmax)
        for letter, share in pos.shares.items():
            s[f"position/{letter}"] = round(share, 4)
        lb = mcq.length_bias(idx)
        s["length_bias/correct_longest"] = round(lb.share_longest, 4)
        s["length_bias/excess_over_chance"] = round(lb.excess, 4)
    qlens = [len(tokens(q, lang)) for q in df["question"].fillna("")]
    s["question_tokens/mean"] = round(float(np.mean(qlens)), 2) if qlens else 0.0
    for task, qs in df.groupby("task")["question"]:  # per task: fixed prompts (MAIA's SV question) stay apart
        s[f"question_tokens/{task}"] = round(float(np.mean([len(tokens(q, lang)) for q in qs.fillna("")])), 2)
    oe = df[df["task"] == "open_ended"]  # answer pools: open-ended references (MAIA's 8 answers)
    pools = [[str(x) for x in as_list(r)] for r in oe["references"] if len(as_list(r)) >= 2]
    if pools:
        st = [pool_stats(p, threshold, lang=lang) for p in pools]
        s["answer_pools"] = len(pools)
        s["answer_pool/overlap_mean"] = round(float(np.mean([x["overlap_mean"] for x in st])), 4)
        s["answer_pool/overlap_mean_cw"] = round(float(np.mean([x["overlap_mean_cw"] for x in st])), 4)
        s["answer_pool/ttr"] = round(float(np.mean([x["ttr"] for x in st])), 4)
        s["answer_pool/ttr_cw"] = round(float(np.mean([x["ttr_cw"] for x in st])), 4)
    sv = df[df["task"] == "statement_verification"]
    if len(sv):
        by_q: dict[str, list[str]] = {}
        for o, a, lab in zip(sv["options"], sv["answer"], sv["labels"]):
            q = as_object(lab).get("question_id")
            opts = as_list(o)
            if q and opts:
                by_q.setdefault(str(q), []).append(str(opts[mcq.letter_index(str(a))]))
        st = [pool_stats(p, threshold, lang=lang) for p in by_q.values() if len(p) >= 2]
        if st:
            s["statement_pools"] = len(st)
            s["statement_pool/overlap_mean"] = round(float(np.mean([x["overlap_mean"] for x in st])), 4)
            s["statement_pool/ttr_cw"] = round(float(np.mean([x["ttr_cw"] for x in st])), 4)
    s["language"] = lang
    return s


def side_by_side(
    items: pd.DataFrame, languages: Mapping[str, str] | None = None, reference: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """One row per figure, one column per side (plus ``paper`` when published figures are given)."""
    cols = {name: side_stats(df, _language(df, languages or {}, name)) for name, df in sides(items).items()}
    table = pd.DataFrame(cols)
    if reference:
        table["paper"] = pd.Series(dict(reference))
    if table.empty:
        return table
    order = sorted(table.index, key=lambda k: (k.split("/")[0] != "items", k.split("/")[0], k))
    return table.loc[order]


def drift(table: pd.DataFrame, against: str = BUILT) -> pd.Series:
    """Largest absolute difference between ``against`` and any release, per figure (numeric rows)."""
    if against not in table or table.shape[1] < 2:
        return pd.Series(dtype=float)
    num = table.apply(pd.to_numeric, errors="coerce")
    rel = [c for c in num.columns if c.startswith("release:")]
    return (num[rel].sub(num[against], axis=0)).abs().max(axis=1).dropna() if rel else pd.Series(dtype=float)


def markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return "_nothing to compare: no built and no imported items_"
    cols = list(table.columns)
    lines = ["| figure | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for k, row in table.iterrows():
        cells = ["" if missing(v) else str(v) for v in row]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(items: pd.DataFrame, path: Path, title: str) -> Path | None:
    """Category shares, correct-position shares and question lengths per side, one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = sides(items)
    if not parts:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    cat = pd.DataFrame(
        {k: v["category"].fillna("(none)").value_counts(normalize=True) for k, v in parts.items()}
    ).fillna(0)
    cat.plot.bar(ax=axes[0])
    axes[0].set_title("category share")
    pos = (
        pd.DataFrame(
            {
                k: v["answer"][v["options"].map(lambda o: len(as_list(o)) >= 2)]
                .map(lambda a: str(a)[:1])
                .value_counts(normalize=True)
                for k, v in parts.items()
            }
        )
        .fillna(0)
        .sort_index()
    )
    if not pos.empty:
        pos.plot.bar(ax=axes[1])
    axes[1].set_title("correct-option position share")
    for k, v in parts.items():
        axes[2].hist([len(str(q).split()) for q in v["question"].fillna("")], bins=20, alpha=0.5, label=k, density=True)
    axes[2].set_title("question length (words)")
    axes[2].legend()
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def data_url(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
