"""MAIA's unimodal baseline (paper §4.3 "Unimodal", App. B "Unimodal models").

Each true/false statement pair of Task 1 (VSV) is scored by local causal language models
through ``minicons`` (``scorer.IncrementalLMScorer``), with no video and no prompt: the
statement a language model finds more probable is the baseline's answer, which measures the
distributional bias of the text alone.

Length normalisation (App. B: "probabilities were computed adding a normalization parameter
to take into account the different length of sentences in terms of tokens"): a statement's
score is its mean token log-probability,

    score(s) = (1 / (T - 1)) · Σ_{t=2..T} log p(w_t | w_<t)

over the T tokens of the encoded ``s`` (minicons ``sequence_score`` with ``reduction = mean``):
the first encoded token has no left context and is not scored. Tokenizers that add a BOS token
themselves (Llama, Gemma, the paper's models) so score every word token; for one that does not
(GPT-2), ``bos_token: true`` prepends it. Across models (§4.3: "for each TS-FS pair, we selected the item with the
highest probability among the five models") the pair's answer is the statement holding the
single highest normalised score over all configured models.

Models come from local folders only (``benchmarks.maia.unimodal.models`` in config/evals.yaml
or ``SUBTEXT_MAIA_UNIMODAL_MODELS``, paths separated by ``os.pathsep``); nothing is downloaded.

``UNIMODAL`` declares it to the spec (``EvalSpec.extra_evals``): the shared factory
(assets/evals/baselines.py) makes the asset ``maia_unimodal_eval`` of it, and runs ``configure``
and ``evaluate`` through the paper's hooks (``extra_eval_configure`` / ``extra_eval_evaluate``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec, ExtraEval
from forge.evals.scoring import Scorer, score_benchmark

ENV_MODELS = "SUBTEXT_MAIA_UNIMODAL_MODELS"
MODEL = "unimodal"  # the leaderboard's model name
SETTING = "text_only"  # no video: the statements alone
TASK = "statement_verification"
HOW_TO_CONFIGURE = (
    "no local language model is configured for MAIA's unimodal baseline: set "
    "`benchmarks.maia.unimodal.models: [/path/to/causal-lm, ...]` in config/evals.yaml, or "
    f"{ENV_MODELS}=/path/one{os.pathsep}/path/two (local Hugging Face folders with config, weights "
    "and tokenizer; the paper used Llama-3.1-8B-Instruct, LLaMAntino-2-7B, LLaMAntino-3-ANITA-8B, "
    "Gemma-7B and Qwen2.5-7B-Instruct)"
)


@dataclass(frozen=True)
class UnimodalConfig:
    models: tuple[str, ...]
    device: str = "cpu"
    batch_size: int = 16
    bos_token: bool = False


def unimodal_config(block: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> UnimodalConfig | None:
    """The baseline's settings from ``benchmarks.maia.unimodal`` (the environment variable adds
    models); None when no model is configured. A configured path that is not a folder is an
    error: a typo must not silently drop a model from the baseline."""
    block = dict(block or {})
    env = os.environ if env is None else env
    paths = [str(p) for p in block.get("models") or []]
    paths += [p for p in (env.get(ENV_MODELS) or "").split(os.pathsep) if p.strip()]
    if not paths:
        return None
    missing = [p for p in paths if not Path(p).is_dir()]
    if missing:
        raise FileNotFoundError(f"MAIA unimodal baseline: model folder(s) not found: {missing}")
    return UnimodalConfig(
        tuple(dict.fromkeys(paths)),
        str(block.get("device") or "cpu"),
        int(block.get("batch_size") or 16),
        bool(block.get("bos_token")),
    )


def mean_logprob(scores: Any) -> float:
    """minicons reduction: the mean of a statement's token log-probabilities (its length-normalised score)."""
    return float(scores.mean(0).item())


def statement_scores(
    texts: Sequence[str], model_path: str, device: str = "cpu", batch_size: int = 16, bos_token: bool = False
) -> list[float]:
    """Length-normalised log-probability of each text under the causal LM at ``model_path``."""
    from minicons import scorer  # heavy (torch, transformers): only when the baseline runs

    lm = scorer.IncrementalLMScorer(model_path, device=device)
    kw = {"bos_token": True} if bos_token and lm.tokenizer.bos_token else {}
    out: list[float] = []
    for k in range(0, len(texts), batch_size):
        out += lm.sequence_score(list(texts[k : k + batch_size]), reduction=mean_logprob, **kw)
    return out


def pick_statements(per_model: dict[str, np.ndarray]) -> np.ndarray:
    """Index (0/1) of the chosen statement per pair: arrays of shape (pairs, 2), one per model;
    the statement with the single highest score over all models wins (a tie keeps the first)."""
    stacked = np.stack(list(per_model.values()))  # models × pairs × 2
    return stacked.max(axis=0).argmax(axis=1)


def unimodal_predictions(
    items: pd.DataFrame,
    cfg: UnimodalConfig,
    score_fn: Callable[[Sequence[str], str], list[float]] | None = None,
) -> pd.DataFrame:
    """One ``eval_predictions``-shaped row per VSV pair: the chosen statement, right or wrong.
    ``items``: exported MAIA items (``options`` = the two statements, ``answer`` = the true
    statement's letter); other tasks are ignored. ``score_fn(texts, model_path)`` defaults to
    minicons on ``cfg``'s device."""
    sv = items[items["task"] == TASK].reset_index(drop=True)
    if sv.empty:
        return pd.DataFrame()
    pairs = [list(o) for o in sv["options"]]
    bad = [i for i, p in zip(sv["item_id"], pairs, strict=True) if len(p) != 2]
    if bad:
        raise ValueError(f"MAIA unimodal baseline: items without exactly two statements: {bad[:5]}")
    score_fn = score_fn or (lambda t, m: statement_scores(t, m, cfg.device, cfg.batch_size, cfg.bos_token))
    flat = [s for p in pairs for s in p]
    per_model = {m: np.asarray(score_fn(flat, m), dtype=float).reshape(-1, 2) for m in cfg.models}
    chosen = pick_statements(per_model)
    rows = []
    for k, r in enumerate(sv.to_dict("records")):
        letter = "AB"[int(chosen[k])]
        ok = letter == str(r["answer"]).strip()
        rows.append(
            {
                "model": MODEL,
                "benchmark": "maia",
                "setting": SETTING,
                "item_id": r["item_id"],
                "variant": 0,
                "task": TASK,
                "category": r.get("category"),
                "split": r.get("split"),
                "source_item_id": r.get("source_item_id"),
                "raw_reply": pairs[k][int(chosen[k])],
                "gold": str(r["answer"]),
                "parsed": letter,
                "parse_ok": True,
                "parse_method": "lm_probability",
                "status": "ok",
                "correct": ok,
                "score": float(ok),
                "detail": json.dumps(
                    {"scores": {Path(m).name: per_model[m][k].round(6).tolist() for m in cfg.models}},
                    ensure_ascii=False,
                ),
                "backend": MODEL,
                "model_id": ",".join(Path(m).name for m in cfg.models),
            }
        )
    return pd.DataFrame(rows)


def unimodal_scores(
    spec: BenchmarkSpec, preds: pd.DataFrame, items: pd.DataFrame, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """``eval_scores`` rows of the baseline by MAIA's own scorer (``spec``: MAIA; sv_accuracy,
    pool_consistency, pool_majority per category); ``pool_consistency`` (Table 1's number) is
    its primary metric."""
    if preds.empty:
        return pd.DataFrame()
    p = preds.assign(detail=[json.loads(d) if isinstance(d, str) else d for d in preds["detail"]])
    rows = pd.DataFrame(score_benchmark(spec, p, items, Scorer(n_boot, seed)))
    rows["primary"] = (rows["metric"] == "pool_consistency") & (rows["slice"] == "all")
    rows.insert(0, "model", MODEL)
    rows.insert(1, "benchmark", spec.name)
    rows["split"] = preds["split"].dropna().iloc[0] if preds["split"].notna().any() else "all"
    rows["backend"] = MODEL
    return rows


def configure(block: Mapping[str, Any]) -> UnimodalConfig | None:
    """The baseline's settings from the benchmark's config/evals.yaml block (its ``unimodal`` key)."""
    return unimodal_config(block.get("unimodal"))


def evaluate(
    spec: BenchmarkSpec, items: pd.DataFrame, split: str, cfg: UnimodalConfig, n_boot: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The baseline on the evaluated items: its predictions, its scores by MAIA's own scorer, and
    the figures shown on the asset (models, pairs, the main metrics)."""
    preds = unimodal_predictions(items.assign(split=split), cfg)
    if len(preds):
        preds["benchmark"] = spec.name  # a copy of the package under another name scores as itself
    scores = unimodal_scores(spec, preds, items, n_boot, seed)
    md: dict[str, Any] = {"models": ", ".join(cfg.models), "pairs": len(preds)}
    if len(scores):
        main = scores[(scores["slice"] == "all")].set_index("metric")["value"]
        md.update({m: float(main[m]) for m in ("sv_accuracy", "pool_consistency") if m in main})
    return preds, scores, md


UNIMODAL = ExtraEval(
    name="unimodal_eval",
    model=MODEL,
    settings=(SETTING,),
    code_version="unimodal-1",
    description="MAIA §4.3 unimodal baseline: each true/false statement pair of the exported test items "
    "scored by local causal LMs (minicons, mean token log-probability, App. B); the more probable "
    "statement over all configured models is the answer. Model `unimodal`, setting `text_only`, on the "
    "leaderboard (primary: pool consistency, Table 1). Skipped with a message when no local model is "
    "configured (`benchmarks.maia.unimodal.models` or SUBTEXT_MAIA_UNIMODAL_MODELS).",
    how_to_configure=HOW_TO_CONFIGURE,
)
# Its two steps by the evaluation's name (the paper's hooks dispatch on it: hooks.py)
CONFIGURE = {UNIMODAL.name: configure}
EVALUATE = {UNIMODAL.name: evaluate}
