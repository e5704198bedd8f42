"""Scorers, one plain function per paper metric (docs/evals.md lists the paper sources).

Item-level functions return numbers for one prediction; aggregate functions take arrays and
optional row ``weights`` (the cluster bootstrap in ``forge.evals.bootstrap`` resamples by
re-weighting rows), and ignore NaN (an unscored item: judge failure, failed call).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

# ViMU App. I: the set score is the recipe's own helper, reused here (one definition).
from forge.recipes.vimu.items import multi_select_score

__all__ = [
    "multi_select_score",
    "partial_set_score",
    "vimu_set_score",
    "vimu_oe_total",
    "vimu_oe_normalised",
    "VIMU_OE_MIN",
    "VIMU_OE_MAX",
    "vimu_oe_intersection",
    "micro_f1",
    "selection_conservatism",
    "error_composition",
    "weighted_mean",
    "vimu_judge_total",
    "vimu_judge_normalised",
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
    "VIMU_JUDGE_RANGES",
]


def weighted_mean(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Mean of the non-NaN values (weighted); NaN when nothing is scored."""
    v = np.asarray(values, dtype=float)
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    m = ~np.isnan(v) & (w > 0)
    return float((v[m] * w[m]).sum() / w[m].sum()) if m.any() else float("nan")


# -- ViMU ------------------------------------------------------------------------------------


def error_composition(predicted: Iterable[str], gold: Iterable[str]) -> str:
    """ViMU Fig. 6b: exact (P = G), miss_only (P ⊊ G), extra_only (G ⊊ P), mixed (both)."""
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
    """A multi-select reply's score, the ViMU official set score (scripts/11-vimu_eg_score.py,
    21-vimu_ss_score.py): 0 when any predicted key is outside the gold set, 0 when the gold set is empty, else |P ∩ G| / |G|.
    An empty prediction therefore scores 0."""
    p, g = set(predicted), set(gold)
    if p - g or not g:
        return 0.0
    return len(p & g) / len(g)


vimu_set_score = partial_set_score  # the name the ViMU parity tests use


# Official OE judge (scripts/01-vimu_oe_judge.py): the judge states ``score_total`` in -6..9;
# an inference error is given -1 without a judge call; 02-vimu_oe_score.py maps the mean raw
# total to (mean + 6) / 15 × 100.
VIMU_OE_MIN, VIMU_OE_MAX = -6.0, 9.0
VIMU_OE_INFERENCE_ERROR = -1.0


def vimu_oe_normalised(total: float) -> float:
    """(total − min) / (max − min): −6 → 0, 9 → 1 (×100 by the caller). Linear, so the mean of
    normalised item scores equals the official normalised mean total."""
    return (float(total) - VIMU_OE_MIN) / (VIMU_OE_MAX - VIMU_OE_MIN)


def vimu_oe_total(judgement: dict, source: str = "stated") -> float:
    """The raw OE total of one judgement. ``stated`` (paper default): the judge's own
    ``score_total``, which must be an integer in −6..9. ``breakdown`` (named option): Eq. 1
    recomputed from the validated components, ignoring the stated total. Raises ``ValueError``
    when the chosen source is missing or invalid (the row is then unscored)."""
    if source == "breakdown":
        return vimu_judge_total(judgement.get("score_breakdown") or judgement)
    v = judgement.get("score_total")
    if v is None or isinstance(v, bool):
        raise ValueError("judgement lacks score_total")
    f = float(v)
    if f != int(f) or not VIMU_OE_MIN <= f <= VIMU_OE_MAX:
        raise ValueError(f"score_total {v!r} outside the integers -6..9")
    return f


def vimu_oe_intersection(rows: Sequence[tuple[str, str, float | None]]) -> dict[str, list[float]]:
    """Official cross-model comparison (02-vimu_oe_score.py): rows are (model, video, raw
    total or None); rows without a total are dropped, then only videos with a total for *every*
    model seen are kept. Returns each model's totals on that common set."""
    by_video: dict[str, dict[str, float]] = {}
    models: set[str] = set()
    for model, video, total in rows:
        if total is None or (isinstance(total, float) and np.isnan(total)):
            continue
        by_video.setdefault(video, {})[model] = float(total)
        models.add(model)
    keep = sorted(v for v, m in by_video.items() if len(m) == len(models))
    return {m: [by_video[v][m] for v in keep] for m in sorted(models)}


def micro_f1(
    predicted: Sequence[Iterable[str]], gold: Sequence[Iterable[str]], weights: np.ndarray | None = None
) -> dict[str, float]:
    """Micro-averaged precision / recall / F1 of set predictions (ViMU Fig. 6a, EG): true
    positives, predicted and gold keys pooled over items before dividing."""
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
    """Official ``selection_conservatism`` (11-vimu_eg_score.py): mean predicted set size minus
    mean gold set size; negative = under-selects (conservative), positive = over-selects."""
    w = np.ones(len(gold)) if weights is None else np.asarray(weights, dtype=float)
    if not w.sum():
        return float("nan")
    p = np.array([len(set(x)) for x in predicted], dtype=float)
    g = np.array([len(set(x)) for x in gold], dtype=float)
    return float(((p - g) * w).sum() / w.sum())


# App. B: score_total = core + implicit + target - hallucination - literal_only.
VIMU_JUDGE_RANGES = {
    "core_intent": (0, 5),
    "implicit_signal": (0, 3),
    "target_or_social_meaning": (0, 1),
    "hallucination_penalty": (0, 3),
    "literal_only_penalty": (0, 3),
}
VIMU_JUDGE_MAX = 9.0


def vimu_judge_total(breakdown: dict) -> float:
    """Eq. (1) of App. B; raises ``ValueError`` on a missing or out-of-range component
    (a judge reply we cannot trust is a judge failure, never a clipped guess)."""
    vals = {}
    for key, (lo, hi) in VIMU_JUDGE_RANGES.items():
        if key not in breakdown or breakdown[key] is None:
            raise ValueError(f"judge breakdown lacks {key}")
        v = float(breakdown[key])
        if not lo <= v <= hi:
            raise ValueError(f"judge {key}={v} outside [{lo}, {hi}]")
        vals[key] = v
    return (
        vals["core_intent"]
        + vals["implicit_signal"]
        + vals["target_or_social_meaning"]
        - vals["hallucination_penalty"]
        - vals["literal_only_penalty"]
    )


def vimu_judge_normalised(judgement: dict, source: str = "stated") -> float:
    """The OE item score in [0, 1]: the raw total (``vimu_oe_total``) normalised as the
    official script does, (total + 6) / 15."""
    return vimu_oe_normalised(vimu_oe_total(judgement, source))


def option_affinity(
    predicted: Sequence[Iterable[str]],
    gold: Sequence[Iterable[str]],
    letters: Sequence[str],
    weights: np.ndarray | None = None,
) -> dict[str, float]:
    """ViMU Fig. 9: per option, predicted prevalence minus gold prevalence (share of items)."""
    w = np.ones(len(gold)) if weights is None else np.asarray(weights, dtype=float)
    out = {}
    for x in letters:
        p = np.array([x in set(s) for s in predicted], dtype=float)
        g = np.array([x in set(s) for s in gold], dtype=float)
        out[x] = float(((p - g) * w).sum() / w.sum()) if w.sum() else float("nan")
    return out


def cooccurrence(sets: Sequence[Iterable[str]], letters: Sequence[str]) -> np.ndarray:
    """ViMU Fig. 8: normalised k×k co-occurrence; entry (i, j) = share of items selecting both
    i and j (the diagonal is each label's prevalence)."""
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
    """ViMU Fig. 8d: geometry distortion = ‖A − B‖_F."""
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))


# -- VAGUE / MCQ -----------------------------------------------------------------------------


def chosen_option_type(letter: str | None, option_types: Sequence[str]) -> str | None:
    """VAGUE §5.2: the type (correct / FS / SU / NE) of the option a model picked."""
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
    """MAIA pool consistency / circular evaluation: True iff every flag is True; None if any
    flag is unknown (a failed call) and none is False."""
    flags = list(flags)
    if any(f is False for f in flags):
        return False
    if any(f is None for f in flags) or not flags:
        return None
    return True


# -- Hummus ----------------------------------------------------------------------------------


def f1_per_class(
    predicted: Sequence[str | None], gold: Sequence[str], classes: Sequence[str], weights: np.ndarray | None = None
) -> dict[str, float]:
    """Per-class F1 (Hummus Table 2: Pos / Neg, and their average). A missing prediction
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
    """Boxes as normalised [top, left, height, width] (Hummus Table 1). Returns IoU, precision
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
    """ROUGE-L F-measure against the best-matching reference (MAIA Table 4's pool of 8)."""
    return max((float(_rouge().score(r, prediction)["rougeL"].fmeasure) for r in references if r), default=0.0)
