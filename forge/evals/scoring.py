"""Judges, embedding/overlap scores and the aggregate ``eval_scores`` rows per benchmark.

Every aggregate row: (setting, metric, slice, value, ci_low, ci_high, n, coverage, primary).
``n`` = items in the slice, ``coverage`` = share of them with a score (an item whose judge
failed, or whose call failed, has none: it is left out of the mean, never filled in).
Unparseable replies are the model's failure and score 0 (success rate reported separately).
CIs: cluster bootstrap by ``source_item_id`` (forge/evals/bootstrap.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from forge.evals import extract as ex
from forge.evals.bootstrap import cluster_bootstrap
from forge.evals.requests import as_list, jload
from forge.evals.scorers import (
    all_correct, box_iou, cooccurrence, f1_per_class, frobenius, option_affinity, rouge_l, rouge_n, span_overlap,
    vimu_judge_normalised, weighted_mean,
)
from forge.llm.types import LLMRequest, LLMResult

PRIMARY = {"iibench": "accuracy", "vimu": "All-Avg", "vague": "accuracy", "maia": "agg_accuracy", "hummus": "f1_avg"}
VIMU_LETTERS = ("A", "B", "C", "D", "E")


# -- judges ----------------------------------------------------------------------------------

def judge_requests(benchmark: str, rows: list[dict[str, Any]], items: dict[str, dict[str, Any]], prompt: Any) -> list[tuple[int, LLMRequest]]:
    """(row index, judge request) for every open-ended prediction that has an answer."""
    out = []
    for i, r in enumerate(rows):
        if r["task"] != "open_ended" or r["status"] != "ok":
            continue
        item = items[r["item_id"]]
        rid = f"{r['setting']}:{r['item_id']}"
        if benchmark == "vimu":
            pts = jload(item.get("extra")).get("reference_points") or []
            v = {"question": item["question"], "gold": item["answer"],
                 "reference_points": "; ".join(map(str, pts)) or "(none)", "prediction": r["parsed"]}
        else:
            refs = as_list(item.get("references"))
            v = {"question": item["question"], "answer": r["parsed"],
                 "references": "\n".join(f"R{k}: {t}" for k, t in enumerate(refs, start=1))}
        out.append((i, LLMRequest(item_id=rid, prompt=prompt, variables=v, params={"temperature": 0})))
    return out


def apply_judge(benchmark: str, rows: list[dict[str, Any]], pairs: list[tuple[int, LLMRequest]],
                results: list[LLMResult]) -> None:
    for (i, _), res in zip(pairs, results, strict=True):
        r = rows[i]
        r.update(judge_model=res.model, judge_prompt_hash=res.prompt_hash)
        if not res.ok:
            r.update(judge_ok=False, judge_error=f"{res.error_class}: {res.error}", score=None, correct=None)
            continue
        data = res.data or {}
        r["judge_json"] = json.dumps(data, ensure_ascii=False)
        try:
            if benchmark == "vimu":
                s = vimu_judge_normalised(data)
                r.update(judge_ok=True, judge_score=s, score=s, judge_verdict=data.get("verdict"),
                         judge_justification=data.get("justification"))
            else:
                label = str(data.get("label", "")).strip().lower()
                if label not in ("correct", "incorrect"):
                    raise ValueError(f"judge label {data.get('label')!r}")
                ok = label == "correct"
                r.update(judge_ok=True, judge_score=float(ok), score=float(ok), correct=ok, judge_verdict=data.get("label"))
        except (ValueError, TypeError) as exc:
            r.update(judge_ok=False, judge_error=f"{type(exc).__name__}: {exc}", score=None, correct=None)


JUDGE_MISSING = "judge_missing"


def judge_unavailable(rows: list[dict[str, Any]], pairs: list[tuple[int, LLMRequest]], why: str) -> None:
    """No real judge for these answers (the judge is the offline stub, or the answers are a stub
    model's placeholders): judge failures with the reason, never scores."""
    for i, _ in pairs:
        rows[i].update(judge_ok=False, judge_error=f"{JUDGE_MISSING}: {why}", judge_model=None, score=None,
                       correct=None)


def unparseable_open_ended(rows: list[dict[str, Any]]) -> None:
    """An empty/echo reply to an open-ended question is the model's failure: 0, no judge."""
    for r in rows:
        if r["task"] == "open_ended" and r["status"] == "unparseable":
            r.update(score=0.0, correct=False)


# -- embedding / overlap item scores ---------------------------------------------------------

def similarity_scores(rows: list[dict[str, Any]], items: dict[str, dict[str, Any]], embedder: Any,
                      thresholds: dict[str, float]) -> None:
    """Hummus naming / image_label / box / caption / explanation and MAIA OE similarity."""
    pairs: list[tuple[int, list[str]]] = []
    for i, r in enumerate(rows):
        if r["status"] != "ok":
            if r["status"] == "unparseable" and r["benchmark"] == "hummus":
                r.update(score=0.0, correct=False)
            continue
        item = items[r["item_id"]]
        refs = [str(x) for x in as_list(item.get("references")) or [item["answer"]]]
        task = r["task"]
        if r["benchmark"] == "maia" and task == "open_ended":
            r["detail"]["rouge_l"] = rouge_l(r["parsed"], refs)
            pairs.append((i, refs))
        elif task in ("naming", "image_label"):
            pairs.append((i, refs))
        elif task == "image_box":
            pred = r["detail"]["parsed"]["box"]
            golds = [b["box_norm_tlhw"] for b in jload(item.get("labels")).get("boxes", [])]
            best = max((box_iou(pred, g) for g in golds), key=lambda d: d["iou"], default=None)
            if best is None:
                r.update(status="no_gold", score=None)
                continue
            r["detail"].update(best)
            r.update(score=best["iou"], correct=best["iou"] > thresholds.get("iou", 0.5))
        elif task == "caption_highlight":
            gold = ex.extract_highlight(item["answer"]).values.get("spans", [])
            o = span_overlap(r["detail"]["parsed"]["spans"], gold)
            r["detail"].update(o)
            r.update(score=o["jaccard"])
        elif task == "explanation":
            r1, r2 = rouge_n(r["parsed"], item["answer"], 1), rouge_n(r["parsed"], item["answer"], 2)
            r["detail"].update(rouge1=r1, rouge2=r2)
            r.update(score=r1, correct=r1 >= thresholds.get("rouge1", 0.35) and r2 >= thresholds.get("rouge2", 0.087))
    if pairs and embedder is not None:
        preds = [rows[i]["parsed"] for i, _ in pairs]
        flat = sorted({t for _, refs in pairs for t in refs})
        pos = {t: k for k, t in enumerate(flat)}
        sim = embedder.similarity(preds, flat)
        for n, (i, refs) in enumerate(pairs):
            s = float(max(sim[n, pos[t]] for t in refs))
            r = rows[i]
            r["detail"]["similarity"] = s
            if r["benchmark"] == "hummus":
                r.update(score=s, correct=s >= thresholds.get(r["task"], 0.6))


# -- aggregation -----------------------------------------------------------------------------

class Scorer:
    def __init__(self, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05):
        self.n_boot, self.seed, self.alpha = n_boot, seed, alpha
        self.rows: list[dict[str, Any]] = []

    def add(self, setting: str, metric: str, df: pd.DataFrame, values: np.ndarray | None = None,
            stat: Callable[[np.ndarray], float] | None = None, slice_: str = "all", primary: bool = False,
            scale: float = 1.0, coverage: float | None = None) -> None:
        """One row: ``values`` (NaN = unscored) averaged, or any ``stat(weights)``."""
        if df.empty:
            return
        if stat is None:
            v = np.asarray(values, dtype=float)
            stat = lambda w, v=v: weighted_mean(v, w)  # noqa: E731
            cov = float((~np.isnan(v)).mean())
        else:
            cov = 1.0 if coverage is None else coverage
        point = stat(np.ones(len(df)))
        lo, hi = cluster_bootstrap(stat, df["source_item_id"].tolist(), self.n_boot, self.seed, self.alpha)
        f = lambda x: None if x is None or np.isnan(x) else float(x) * scale  # noqa: E731
        self.rows.append({"setting": setting, "metric": metric, "slice": slice_, "value": f(point), "ci_low": f(lo),
                          "ci_high": f(hi), "n": int(len(df)), "coverage": cov, "primary": primary})

    def mean(self, setting: str, metric: str, df: pd.DataFrame, col: str, **kw: Any) -> None:
        self.add(setting, metric, df, values=pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float), **kw)

    def success(self, setting: str, df: pd.DataFrame, slice_: str = "all") -> None:
        called = df[df["status"] != "call_failed"]
        self.add(setting, "success_rate", df, values=np.where(df["status"] == "call_failed", np.nan,
                                                               (df["status"] != "unparseable").astype(float)), slice_=slice_)
        del called


def collapse_variants(preds: pd.DataFrame) -> pd.DataFrame:
    """Circular evaluation: one row per item, right only if right under every rotation."""
    base = preds[preds["variant"] == 0].copy()
    if (preds["variant"] > 0).any():
        agg = preds.groupby(["setting", "item_id"])["correct"].apply(lambda s: all_correct(s.tolist()))
        base["circular_correct"] = [agg.get((s, i)) for s, i in zip(base["setting"], base["item_id"])]
    return base


def _num(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)


def _bool(s: pd.Series) -> np.ndarray:
    return np.array([np.nan if v is None or (isinstance(v, float) and np.isnan(v)) else float(bool(v)) for v in s])


def score_benchmark(benchmark: str, preds: pd.DataFrame, items: pd.DataFrame, sc: Scorer) -> list[dict[str, Any]]:
    if preds.empty:
        return []
    items_by = items.set_index("item_id")
    full = preds.copy()
    df = collapse_variants(full)
    df["labels_d"] = [jload(items_by.at[i, "labels"]) if i in items_by.index else {} for i in df["item_id"]]
    primary = PRIMARY[benchmark]
    for setting, g in df.groupby("setting", sort=False):
        g = g.reset_index(drop=True)
        sc.success(setting, g)
        if "circular_correct" in g and g["circular_correct"].notna().any():
            sc.add(setting, "circular_accuracy", g, values=_bool(g["circular_correct"]))
        fn = globals()[f"_score_{benchmark}"]
        fn(setting, g, sc, primary)
    return sc.rows


def _slices(sc: Scorer, setting: str, g: pd.DataFrame, metric: str, col: str, keys: list[str]) -> None:
    for key in keys:
        vals = g["labels_d"].map(lambda d, k=key: d.get(k))
        exploded = pd.DataFrame({"i": range(len(g)), "v": vals}).explode("v")
        for val, sub in exploded.dropna().groupby("v"):
            sc.add(setting, metric, g.iloc[sub["i"].tolist()], values=_num(g.iloc[sub["i"].tolist()][col]),
                   slice_=f"{key}={val}")


def _score_iibench(setting: str, g: pd.DataFrame, sc: Scorer, primary: str) -> None:
    sc.mean(setting, "accuracy", g, "score", primary=True)
    _slices(sc, setting, g, "accuracy", "score", ["domain", "emotion", "image_type", "difficulty", "rhetoric"])


def _score_vague(setting: str, g: pd.DataFrame, sc: Scorer, primary: str) -> None:
    sc.mean(setting, "accuracy", g, "score", primary=True)
    for cat, sub in g.groupby("category"):
        sc.mean(setting, "accuracy", sub, "score", slice_=f"category={cat}")
    chosen = g["detail"].map(lambda d: (d or {}).get("chosen_type"))
    for t in ("FS", "SU", "NE"):
        flag = (chosen == t).astype(float).to_numpy()
        sc.add(setting, f"errors_{t}", g, stat=lambda w, f=flag: float((f * w).sum()))
        sc.add(setting, f"error_rate_{t}", g, values=flag)


def _score_maia(setting: str, g: pd.DataFrame, sc: Scorer, primary: str) -> None:
    sv = g[g["task"] == "statement_verification"].reset_index(drop=True)
    oe = g[g["task"] == "open_ended"].reset_index(drop=True)
    if len(sv):
        sc.mean(setting, "sv_accuracy", sv, "score")
        for cat, sub in sv.groupby("category"):
            sc.mean(setting, "sv_accuracy", sub, "score", slice_=f"category={cat}")
    qid = lambda d: d.get("question_id")  # noqa: E731
    pools = pd.DataFrame()
    if len(sv):
        sv = sv.assign(question_id=sv["labels_d"].map(qid))
        pools = sv.groupby("question_id").agg(pool_ok=("correct", lambda s: all_correct(s.tolist())),
                                              pairs=("item_id", "size"), source_item_id=("source_item_id", "first"),
                                              category=("category", "first")).reset_index()
        sc.add(setting, "pool_consistency", pools, values=_bool(pools["pool_ok"]))
    if len(oe):
        sc.mean(setting, "oe_accuracy", oe, "score")
        for cat, sub in oe.groupby("category"):
            sc.mean(setting, "oe_accuracy", sub, "score", slice_=f"category={cat}")
        sc.add(setting, "rouge_l", oe, values=np.array([(d or {}).get("rouge_l", np.nan) for d in oe["detail"]], dtype=float))
        sc.add(setting, "embedding_similarity", oe,
               values=np.array([(d or {}).get("similarity", np.nan) for d in oe["detail"]], dtype=float))
    if len(oe) and len(pools):
        oe = oe.assign(question_id=oe["labels_d"].map(qid))
        m = oe.merge(pools[["question_id", "pool_ok"]], on="question_id", how="inner")
        agg = [np.nan if p is None or s is None or (isinstance(s, float) and np.isnan(s)) else float(bool(p) and s >= 1.0)
               for p, s in zip(m["pool_ok"], m["score"])]
        sc.add(setting, "agg_accuracy", m, values=np.array(agg, dtype=float), primary=True)


def _score_vimu(setting: str, g: pd.DataFrame, sc: Scorer, primary: str) -> None:
    tasks = {}
    for task in ("OE", "EG", "RM", "SV"):
        sub = g[g["category"] == task].reset_index(drop=True)
        if len(sub):
            tasks[task] = sub
            sc.mean(setting, task, sub, "score", scale=100.0)
    # SSU-Avg (RM, SV) and All-Avg (the four tasks): mean of task means, resampled jointly.
    for name, keys in (("SSU-Avg", ("RM", "SV")), ("All-Avg", ("OE", "EG", "RM", "SV"))):
        if not all(k in tasks for k in keys):
            continue
        sub = g[g["category"].isin(keys)].reset_index(drop=True)
        v, cat = _num(sub["score"]), sub["category"].to_numpy()
        masks = [cat == k for k in keys]
        stat = lambda w, v=v, masks=masks: float(np.mean([weighted_mean(v[m], w[m]) for m in masks]))  # noqa: E731
        sc.add(setting, name, sub, stat=stat, primary=name == "All-Avg", scale=100.0,
               coverage=float((~np.isnan(v)).mean()))
    for task in ("EG", "RM", "SV"):
        if task not in tasks:
            continue
        sub = tasks[task]
        comp = sub["detail"].map(lambda d: (d or {}).get("composition"))
        for kind in ("exact", "miss_only", "extra_only", "mixed", "unparseable"):
            sc.add(setting, f"composition_{kind}", sub, values=(comp == kind).astype(float).to_numpy(), slice_=f"task={task}")
        ok = sub[sub["status"] == "ok"]
        if len(ok):
            preds = [d.get("pred_set", []) for d in ok["detail"]]
            golds = [d.get("gold_set", []) for d in ok["detail"]]
            for letter, val in option_affinity(preds, golds, VIMU_LETTERS).items():
                flag_p = np.array([letter in p for p in preds], dtype=float)
                flag_g = np.array([letter in x for x in golds], dtype=float)
                sc.add(setting, "option_affinity", ok, stat=lambda w, a=flag_p - flag_g: float((a * w).sum() / w.sum()),
                       slice_=f"task={task},option={letter}")
                del val
            dist = frobenius(cooccurrence(preds, VIMU_LETTERS), cooccurrence(golds, VIMU_LETTERS))
            sc.rows.append({"setting": setting, "metric": "cooccurrence_distance", "slice": f"task={task}", "value": dist,
                            "ci_low": None, "ci_high": None, "n": len(ok), "coverage": len(ok) / len(sub), "primary": False})


def _score_hummus(setting: str, g: pd.DataFrame, sc: Scorer, primary: str) -> None:
    cls = g[g["task"] == "classification"].reset_index(drop=True)
    if len(cls):
        pred = [None if s != "ok" else ("pos" if p == "A" else "neg") for s, p in zip(cls["status"], cls["parsed"])]
        gold = ["pos" if a == "A" else "neg" for a in cls["gold"]]
        for name, key in (("f1_pos", "pos"), ("f1_neg", "neg"), ("f1_avg", "avg")):
            sc.add(setting, name, cls, stat=lambda w, k=key: f1_per_class(pred, gold, ["pos", "neg"], w)[k],
                   primary=name == "f1_avg", coverage=float((cls["status"] != "call_failed").mean()))
    for task, metrics in (
        ("naming", [("naming_similarity", "similarity"), ("naming_match_rate", "@correct")]),
        ("image_label", [("label_similarity", "similarity"), ("label_match_rate", "@correct")]),
        ("image_box", [("box_iou", "iou"), ("box_precision", "precision"), ("box_recall", "recall"),
                       ("box_match_rate", "@correct")]),
        ("caption_highlight", [("caption_jaccard", "jaccard"), ("caption_precision", "precision"),
                               ("caption_recall", "recall")]),
        ("explanation", [("explanation_rouge1", "rouge1"), ("explanation_rouge2", "rouge2"),
                         ("explanation_acceptable_rate", "@correct")]),
    ):
        sub = g[g["task"] == task].reset_index(drop=True)
        if not len(sub):
            continue
        sc.success(setting, sub, slice_=f"task={task}")
        # Hummus reports means over the answers that could be evaluated, with the success rate.
        ok = sub[sub["status"] == "ok"].reset_index(drop=True)
        for metric, key in metrics:
            if key == "@correct":
                vals = _bool(ok["correct"])
            else:
                vals = np.array([(d or {}).get(key, np.nan) for d in ok["detail"]], dtype=float)
            sc.add(setting, metric, ok if len(ok) else sub.iloc[:0], values=vals)
