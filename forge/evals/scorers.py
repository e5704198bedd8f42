"""Scorers: generic item and set formulas the benchmarks' scoring rules are built from
(docs/evals.md lists which paper uses which; a benchmark's own rules live in
``assets/recipes/<name>/logic/scoring.py``).

Item-level functions return numbers for one prediction; aggregate functions take arrays and
optional row ``weights`` (the cluster bootstrap in ``forge.evals.bootstrap`` resamples by
re-weighting rows), and ignore NaN (an unscored item: judge failure, failed call).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

__all__ = [
    "partial_set_score",
    "micro_f1",
    "selection_conservatism",
    "error_composition",
    "weighted_mean",
    "option_affinity",
    "cooccurrence",
    "frobenius",
    "chosen_option_type",
    "all_correct",
    "f1_per_class",
    "box_iou",
    "span_tokens",
    "span_overlap",
    "rouge_n",
    "rouge_l",
    "rotations",
]


def weighted_mean(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Mean of the non-NaN values (weighted); NaN when nothing is scored."""
    v = np.asarray(values, dtype=float)
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    m = ~np.isnan(v) & (w > 0)
    return float((v[m] * w[m]).sum() / w[m].sum()) if m.any() else float("nan")


# -- set predictions (multi-select) ---------------------------------------------------------


def error_composition(predicted: Iterable[str], gold: Iterable[str]) -> str:
    """Error composition of a set prediction: exact (P = G), miss_only (P ⊊ G), extra_only
    (G ⊊ P), mixed (both)."""
    p, g = set(predicted), set(gold)
    if p == g:
        return "exact"
    missing, extra = bool(g - p), bool(p - g)
    if missing and not extra:
        return "miss_only"
    if extra and not missing:
        return "extra_only"
    return "mixed"


def partial_set_score(predicted: Iterable[str], gold: Iterable[str]) -> float:
    """A multi-select reply's score: 0 when any predicted key is outside the gold set, 0 when
    the gold set is empty, else |P ∩ G| / |G|. An empty prediction therefore scores 0."""
    p, g = set(predicted), set(gold)
    if p - g or not g:
        return 0.0
    return len(p & g) / len(g)


def micro_f1(
    predicted: Sequence[Iterable[str]], gold: Sequence[Iterable[str]], weights: np.ndarray | None = None
) -> dict[str, float]:
    """Micro-averaged precision / recall / F1 of set predictions: true positives, predicted
    and gold keys pooled over items before dividing."""
    w = np.ones(len(gold)) if weights is None else np.asarray(weights, dtype=float)
    tp = sum(wi * len(set(p) & set(g)) for p, g, wi in zip(predicted, gold, w))
    npred = sum(wi * len(set(p)) for p, wi in zip(predicted, w))
    ngold = sum(wi * len(set(g)) for g, wi in zip(gold, w))
    prec = tp / npred if npred else 0.0
    rec = tp / ngold if ngold else 0.0
    return {
        "precision": float(prec),
        "recall": float(rec),
        "f1": float(2 * prec * rec / (prec + rec)) if prec + rec else 0.0,
    }


def selection_conservatism(
    predicted: Sequence[Iterable[str]], gold: Sequence[Iterable[str]], weights: np.ndarray | None = None
) -> float:
    """Mean predicted set size minus mean gold set size; negative = under-selects
    (conservative), positive = over-selects."""
    w = np.ones(len(gold)) if weights is None else np.asarray(weights, dtype=float)
    if not w.sum():
        return float("nan")
    p = np.array([len(set(x)) for x in predicted], dtype=float)
    g = np.array([len(set(x)) for x in gold], dtype=float)
    return float(((p - g) * w).sum() / w.sum())


def option_affinity(
    predicted: Sequence[Iterable[str]],
    gold: Sequence[Iterable[str]],
    letters: Sequence[str],
    weights: np.ndarray | None = None,
) -> dict[str, float]:
    """Per option, predicted prevalence minus gold prevalence (share of items)."""
    w = np.ones(len(gold)) if weights is None else np.asarray(weights, dtype=float)
    out = {}
    for x in letters:
        p = np.array([x in set(s) for s in predicted], dtype=float)
        g = np.array([x in set(s) for s in gold], dtype=float)
        out[x] = float(((p - g) * w).sum() / w.sum()) if w.sum() else float("nan")
    return out


def cooccurrence(sets: Sequence[Iterable[str]], letters: Sequence[str]) -> np.ndarray:
    """Normalised k×k co-occurrence; entry (i, j) = share of items selecting both i and j (the
    diagonal is each label's prevalence)."""
    k = len(letters)
    idx = {x: i for i, x in enumerate(letters)}
    m = np.zeros((k, k))
    n = 0
    for s in sets:
        n += 1
        sel = [idx[x] for x in set(s) if x in idx]
        for i in sel:
            for j in sel:
                m[i, j] += 1
    return m / n if n else m


def frobenius(a: np.ndarray, b: np.ndarray) -> float:
    """Distortion between two co-occurrence geometries: ‖A − B‖_F."""
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))


# -- multiple choice -------------------------------------------------------------------------


def chosen_option_type(letter: str | None, option_types: Sequence[str]) -> str | None:
    """The type of the option a model picked (an item's ``option_types``, e.g. correct or a
    kind of distractor)."""
    if not letter:
        return None
    i = ord(letter.upper()) - ord("A")
    return option_types[i] if 0 <= i < len(option_types) else None


def rotations(options: Sequence[str], answer: str) -> list[tuple[list[str], str]]:
    """Circular evaluation: every cyclic rotation of the options with the gold letter(s)
    moved along (MMBench's CircularEval); an item counts only if all are answered right."""
    n = len(options)
    gold = [ord(x.strip()) - ord("A") for x in answer.split(",") if x.strip()]
    out = []
    for k in range(n):
        opts = [options[(i + k) % n] for i in range(n)]
        new = sorted(chr(ord("A") + ((g - k) % n)) for g in gold)
        out.append((opts, ",".join(new)))
    return out


def all_correct(flags: Iterable[bool | None]) -> bool | None:
    """Pool consistency / circular evaluation: True iff every flag is True; None if any flag
    is unknown (a failed call) and none is False."""
    flags = list(flags)
    if any(f is False for f in flags):
        return False
    if any(f is None for f in flags) or not flags:
        return None
    return True


# -- classification F1, boxes --------------------------------------------------------------


def f1_per_class(
    predicted: Sequence[str | None], gold: Sequence[str], classes: Sequence[str], weights: np.ndarray | None = None
) -> dict[str, float]:
    """Per-class F1 (e.g. Pos / Neg) and their unweighted average. A missing prediction
    (unparseable) is wrong for every class: it lowers recall of its gold class."""
    w = np.ones(len(gold)) if weights is None else np.asarray(weights, dtype=float)
    p = np.array([x if x is not None else "\0none" for x in predicted], dtype=object)
    g = np.array(list(gold), dtype=object)
    out = {}
    for c in classes:
        tp = float(w[(p == c) & (g == c)].sum())
        fp = float(w[(p == c) & (g != c)].sum())
        fn = float(w[(p != c) & (g == c)].sum())
        out[c] = 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)
    out["avg"] = float(np.mean([out[c] for c in classes]))
    return out


def box_iou(pred_tlhw: Sequence[float], gold_tlhw: Sequence[float]) -> dict[str, float]:
    """Boxes as normalised [top, left, height, width]. Returns IoU, precision
    (intersection / predicted area) and recall (intersection / gold area)."""
    pt, pl, ph, pw = map(float, pred_tlhw)
    gt, gl, gh, gw = map(float, gold_tlhw)
    iw = max(0.0, min(pl + pw, gl + gw) - max(pl, gl))
    ih = max(0.0, min(pt + ph, gt + gh) - max(pt, gt))
    inter = iw * ih
    pa, ga = max(ph * pw, 0.0), max(gh * gw, 0.0)
    union = pa + ga - inter
    return {
        "iou": inter / union if union > 0 else 0.0,
        "precision": inter / pa if pa > 0 else 0.0,
        "recall": inter / ga if ga > 0 else 0.0,
    }


_WORD = re.compile(r"\w+(?:'\w+)?")


def span_tokens(text: str) -> set[str]:
    return {t.lower() for t in _WORD.findall(text or "")}


def span_overlap(pred_spans: Iterable[str], gold_spans: Iterable[str]) -> dict[str, float]:
    """CaptionHL: Jaccard, precision, recall of the highlighted caption words (lower-cased
    word sets of everything inside ``<i></i>``)."""
    p = set().union(*[span_tokens(s) for s in pred_spans]) if pred_spans else set()
    g = set().union(*[span_tokens(s) for s in gold_spans]) if gold_spans else set()
    inter = len(p & g)
    union = len(p | g)
    return {
        "jaccard": inter / union if union else 0.0,
        "precision": inter / len(p) if p else 0.0,
        "recall": inter / len(g) if g else 0.0,
    }


@lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)


def rouge_n(prediction: str, reference: str, n: int) -> float:
    """ROUGE-n F-measure (rouge-score)."""
    return float(_rouge().score(reference, prediction)[f"rouge{n}"].fmeasure)


def rouge_l(prediction: str, references: Sequence[str]) -> float:
    """ROUGE-L F-measure against the best-matching reference of a pool."""
    return max((float(_rouge().score(r, prediction)["rougeL"].fmeasure) for r in references if r), default=0.0)
