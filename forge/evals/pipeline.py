"""One benchmark × one model: every setting, judged and scored (Dagster-free)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd

from forge.evals import requests as rq
from forge.evals.config import ModelSpec, Setting, settings_for
from forge.evals.scoring import (
    Scorer, apply_judge, judge_requests, judge_unavailable, score_benchmark, similarity_scores, unparseable_open_ended,
)
from forge.llm.backends import OpenAIBackend, StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import EngineSettings, LLMEngine
from forge.llm.prompts import load_prompt
from forge.llm.stub import advisory

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "assets" / "evals" / "prompts"
TEST_SPLIT = "test"
DEV_SPLITS = ("dev", "val", "validation")


def model_engine(spec: ModelSpec, base: EngineSettings, cache_path: Path, prices: dict[str, Any] | None = None) -> LLMEngine:
    """The engine for the model under test: its own endpoint and key, the shared cache."""
    backend = StubBackend() if spec.backend == "stub" else OpenAIBackend(spec.base_url, spec.api_key(), timeout=base.timeout_s)
    return LLMEngine(backend, LLMCache(cache_path), dataclasses.replace(base, model=spec.model, stage_overrides={}), prices)


def prompt_files(benchmark: str, cfg: dict[str, Any]) -> list[Path]:
    names = set()
    for s in settings_for(cfg, benchmark):
        names |= {n for n in (s.prompt, s.caption_prompt) if n}
    names |= set((cfg["benchmarks"][benchmark].get("prompts") or {}).values())
    if benchmark in ("vimu", "maia"):
        names.add(f"{benchmark}_oe_judge.yaml")
    return sorted(PROMPTS_DIR / n for n in names)


def select_items(benchmark: str, items: pd.DataFrame, splits: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(evaluation items, dev pool for few-shot, which split): the test split when a
    ``splits`` table has rows for the benchmark, else every item (and then few-shot examples
    come from the other items, never the query's own source)."""
    if splits is not None and len(splits):
        s = splits[splits["benchmark"] == benchmark]
        if len(s):
            test_ids = set(s.loc[s["split"] == TEST_SPLIT, "item_id"])
            dev_ids = set(s.loc[s["split"].isin(DEV_SPLITS), "item_id"])
            return items[items["item_id"].isin(test_ids)], items[items["item_id"].isin(dev_ids)], TEST_SPLIT
    return items, items, "all"


def evaluate(benchmark: str, spec: ModelSpec, cfg: dict[str, Any], items: pd.DataFrame, splits: pd.DataFrame | None,
             data_dir: Path, engine: LLMEngine, judge: LLMEngine | None, embedder: Any = None,
             descriptions: dict[str, str] | None = None, log: Any = None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Predictions and scores of ``spec`` on ``benchmark`` under all its settings."""
    bcfg = cfg["benchmarks"][benchmark]
    items = items.sort_values("item_id").reset_index(drop=True)
    eval_items, dev, split = select_items(benchmark, items, splits)
    if cfg.get("max_items"):
        eval_items = eval_items.head(int(cfg["max_items"]))
    records = eval_items.to_dict("records")
    by_id = {r["item_id"]: r for r in items.to_dict("records")}
    split_of = {r["item_id"]: split for r in records}
    prompts = {p.name: load_prompt(p) for p in prompt_files(benchmark, cfg)}   # keyed by file name
    for key, fname in (bcfg.get("prompts") or {}).items():
        prompts[f"{benchmark}_{'sv' if key == 'statement_verification' else 'oe'}"] = prompts[fname]
    stage = f"{benchmark}_eval"
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {"split": split, "items": len(records), "settings_run": [], "settings_skipped": {},
                            "items_skipped": {}}
    for setting in settings_for(cfg, benchmark):
        ok, why = setting.applicable(spec)
        if not ok:
            meta["settings_skipped"][setting.name] = why
            continue
        part = f"{spec.name}__{setting.name}"
        captions: dict[str, str] = {}
        if setting.input == "self_caption":
            creqs = rq.caption_requests(records, load_prompt(PROMPTS_DIR / setting.caption_prompt), spec, data_dir)
            for res in engine.run(stage, f"{part}__caption", creqs):
                text = (res.data or {}).get("text") if res.ok else None
                if text and text.strip():
                    captions[res.item_id] = text.strip()
        reqs, skipped = rq.build_requests(benchmark, setting, records, prompts, spec, data_dir,
                                          circular=bool(cfg.get("circular")), dev_items=dev.to_dict("records"),
                                          descriptions=descriptions, captions=captions)
        if log:
            log.info(f"{benchmark} × {spec.name} × {setting.name}: {len(reqs)} requests")
        results = engine.run(stage, part, [r.request for r in reqs])
        srows = rq.prediction_rows(spec.name, benchmark, setting, split_of, reqs, results)
        unparseable_open_ended(srows)
        if benchmark in ("vimu", "maia") and judge is not None:
            jp = load_prompt(PROMPTS_DIR / f"{benchmark}_oe_judge.yaml")
            pairs = judge_requests(benchmark, srows, by_id, jp)
            if pairs and advisory(judge):      # the stub never scores: a placeholder verdict is no verdict
                judge_unavailable(srows, pairs, "the judge is the offline stub backend (configure an endpoint)")
            elif pairs and spec.backend == "stub":  # a paid judge is never sent placeholder replies
                judge_unavailable(srows, pairs, f"model {spec.name} is the offline stub: its replies are not judged")
            elif pairs:
                apply_judge(benchmark, srows, pairs, judge.run(f"{benchmark}_eval_judge", part, [p for _, p in pairs]))
        if benchmark in ("hummus", "maia"):
            similarity_scores(srows, by_id, embedder, bcfg.get("thresholds") or {})
        rows += srows
        meta["settings_run"].append(setting.name)
        if skipped:
            meta["items_skipped"][setting.name] = pd.Series([r for _, r in skipped]).value_counts().to_dict()
    preds = pd.DataFrame(rows)
    if len(preds):
        preds["detail"] = preds["detail"].map(lambda d: json.dumps(d, ensure_ascii=False, default=str))
        preds_for_scores = preds.copy()
        preds_for_scores["detail"] = [json.loads(d) for d in preds["detail"]]
    else:
        preds_for_scores = preds
    b = cfg.get("bootstrap") or {}
    sc = Scorer(int(b.get("n", 1000)), int(b.get("seed", 0)), float(b.get("alpha", 0.05)))
    scores = pd.DataFrame(score_benchmark(benchmark, preds_for_scores, items, sc))
    if len(scores):
        scores.insert(0, "model", spec.name)
        scores.insert(1, "benchmark", benchmark)
        scores["split"] = split
        scores["backend"] = spec.backend
    return preds, scores, meta
