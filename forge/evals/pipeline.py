"""One benchmark × one model: every setting, judged and scored (Dagster-free).

Evaluations read what was published: the gated, exported items of a named export version
(``load_export``), never the recipe's raw items table. What differs between benchmarks
(request rendering, reply kinds, judge, similarity, scorer, primary metric) comes from the
benchmark's spec (``forge/benchmarks``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, benchmark_block, settings_for
from forge.evals.scoring import (
    Scorer,
    apply_judge,
    judge_requests,
    judge_unavailable,
    score_benchmark,
    similarity_scores,
    unparseable_open_ended,
)
from forge.items.manifest import existing_versions, read_manifest
from forge.items.typed import restore
from forge.llm.backends import OpenAIBackend, StubBackend
from forge.llm.cache import open_cache
from forge.llm.engine import LLMEngine
from forge.llm.prompts import load_prompt
from forge.llm.settings import EngineSettings
from forge.llm.stub import advisory

TEST_SPLIT = "test"
DEV_SPLITS = ("dev", "val", "validation")


def model_engine(
    model: ModelSpec, base: EngineSettings, cache_path: Path, prices: dict[str, Any] | None = None
) -> LLMEngine:
    """The engine for the model under test: its own endpoint and key, the shared cache. One
    request per item and setting (``verbatim``): no repair turns, the reply as it came (an empty
    one too) is the model's answer and is scored by the paper's rule; transport retries stay
    (429, 5xx, timeouts), but a slow reply is waited for, never hedged with a second copy."""
    backend = (
        StubBackend()
        if model.backend == "stub"
        else OpenAIBackend(model.base_url, model.api_key(), timeout=base.timeout_s)
    )
    return LLMEngine(
        backend,
        open_cache(cache_path),
        base.model_copy(
            update=dict(
                model=model.model,
                stage_overrides={},
                repair=False,
                verbatim=True,
                hedge=False,
                hedge_after_s=math.inf,  # no stall deadline: only the request timeout retries
            )
        ),
        prices,
    )


def prompt_files(spec: BenchmarkSpec, cfg: dict[str, Any]) -> list[Path]:
    """Every prompt file the benchmark's evaluation reads (settings, per-task prompts, judge)."""
    names = set()
    for s in settings_for(cfg, spec):
        names |= {n for n in (s.prompt, s.caption_prompt) if n}
    names |= set((benchmark_block(cfg, spec).get("prompts") or {}).values())
    if spec.eval.judge_prompt:
        names.add(spec.eval.judge_prompt)
    return sorted(spec.eval.prompts_dir / n for n in names)


@dataclasses.dataclass
class PublishedItems:
    """The items of one export version, as evaluations read them."""

    items: pd.DataFrame  # export rows (with ``split``); media paths point into the export folder
    version: str  # "v3"; "" when there is no export
    path: Path | None
    forced_stub: bool = False
    note: str = ""


def load_export(exports_dir: Path, spec: BenchmarkSpec, version: str = "latest") -> PublishedItems:
    """The rows of ``data/exports/<name>/<version>/parquet/*.parquet`` (``latest``: the
    highest version). Media paths are made absolute into the export's own copies, so the
    evaluation sees exactly the published files."""
    name = spec.name
    versions = existing_versions(exports_dir / name)
    if not versions:
        return PublishedItems(
            pd.DataFrame(), "", None, note=f"no export of {name} yet: materialize `{name}_export` first"
        )
    chosen = (
        versions[-1][1]
        if version in (None, "", "latest")
        else next((d for _, d in versions if d.name == version), None)
    )
    if chosen is None:
        raise ValueError(
            f"{name}: export version {version!r} not found (have {', '.join(d.name for _, d in versions)})"
        )
    manifest = read_manifest(chosen)
    parts = sorted((chosen / "parquet").glob("*.parquet"))
    items = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True) if parts else pd.DataFrame()
    if len(items):
        items["media_paths"] = [[str(chosen / f) for f in files] for files in items["file_names"]]
        for c in ("options", "option_types", "references"):
            items[c] = items[c].map(lambda v: list(v) if v is not None and len(v) else None)
        for c, keys in (manifest.get("json_keys") or {}).items():  # typed structs → the items' JSON text
            items[c] = items[c].map(lambda v, keys=keys: json.dumps(restore(v, keys)) if isinstance(v, dict) else v)
        for c in ("labels", "extra", "answer", "category", "source_item_id", "unit_id"):
            items[c] = items[c].map(lambda v: v if v != "" else None)
    return PublishedItems(items, manifest["version"], chosen, bool(manifest.get("forced_stub")))


def select_items(
    spec: BenchmarkSpec, items: pd.DataFrame, splits: pd.DataFrame | None, split_name: str = TEST_SPLIT
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(evaluation items, dev pool for few-shot, which split). Exported items carry their
    ``split``; otherwise a ``splits`` table assigns them; with neither, every item is
    evaluated (and few-shot examples come from the other items, never the query's own source)."""
    if "split" in items.columns and items["split"].notna().any():
        return (items[items["split"] == split_name], items[items["split"].isin(DEV_SPLITS)], split_name)
    if splits is not None and len(splits):
        s = splits[splits["benchmark"] == spec.name]
        if len(s):
            test_ids = set(s.loc[s["split"] == split_name, "item_id"])
            dev_ids = set(s.loc[s["split"].isin(DEV_SPLITS), "item_id"])
            return items[items["item_id"].isin(test_ids)], items[items["item_id"].isin(dev_ids)], split_name
    return items, items, "all"


def judge_rows(
    spec: BenchmarkSpec,
    srows: list[dict[str, Any]],
    by_id: dict[str, dict[str, Any]],
    judge: LLMEngine | None,
    part: str,
    model: ModelSpec,
    scoring: dict[str, Any],
) -> None:
    """The benchmark's judge over the open-ended rows of one setting (the models' path, and the
    human baseline's): the stub never scores, and a stub model's placeholders are never judged."""
    if not spec.eval.judge_prompt or judge is None:
        return
    jp = load_prompt(spec.eval.prompts_dir / spec.eval.judge_prompt)
    pairs = judge_requests(spec, srows, by_id, jp)
    if pairs and advisory(judge):  # the stub never scores: a placeholder verdict is no verdict
        judge_unavailable(srows, pairs, "the judge is the offline stub backend (configure an endpoint)")
    elif pairs and model.backend == "stub":  # a paid judge is never sent placeholder replies
        judge_unavailable(srows, pairs, f"model {model.name} is the offline stub: its replies are not judged")
    elif pairs:
        apply_judge(spec, srows, pairs, judge.run(f"{spec.name}_eval_judge", part, [p for _, p in pairs]), scoring)


def evaluate(
    spec: BenchmarkSpec,
    model: ModelSpec,
    cfg: dict[str, Any],
    items: pd.DataFrame,
    splits: pd.DataFrame | None,
    data_dir: Path,
    engine: LLMEngine,
    judge: LLMEngine | None,
    embedder: Any = None,
    descriptions: dict[str, str] | None = None,
    log: Any = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Predictions and scores of ``model`` on the benchmark ``spec`` under all its settings."""
    name = spec.name
    bcfg = benchmark_block(cfg, spec)
    scoring = dict(bcfg.get("scoring") or {})  # named scoring options; all off = the paper's rules
    items = items.sort_values("item_id").reset_index(drop=True)
    eval_items, dev, split = select_items(spec, items, splits, bcfg["split"])
    if cfg.get("max_items"):
        eval_items = eval_items.head(int(cfg["max_items"]))
    records = eval_items.to_dict("records")
    by_id = {r["item_id"]: r for r in items.to_dict("records")}
    split_of = {r["item_id"]: split for r in records}
    prompts = {p.name: load_prompt(p) for p in prompt_files(spec, cfg)}  # keyed by file name
    for task, fname in (bcfg.get("prompts") or {}).items():  # per-task prompts: `task:<task>`
        prompts[f"task:{task}"] = prompts[fname]
    stage = f"{name}_eval"
    rows: list[dict[str, Any]] = []
    meta: dict[str, Any] = {
        "split": split,
        "items": len(records),
        "settings_run": [],
        "settings_skipped": {},
        "items_skipped": {},
    }
    for setting in settings_for(cfg, spec):
        ok, why = setting.applicable(model)
        if not ok:
            meta["settings_skipped"][setting.name] = why
            continue
        part = f"{model.name}__{setting.name}"
        captions: dict[str, str] = {}
        if setting.input == "self_caption":
            creqs = rq.caption_requests(
                records, load_prompt(spec.eval.prompts_dir / setting.caption_prompt), model, data_dir
            )
            for res in engine.run(stage, f"{part}__caption", creqs):
                text = (res.data or {}).get("text") if res.ok else None
                if text and text.strip():
                    captions[res.item_id] = text.strip()
        reqs, skipped = rq.build_requests(
            spec,
            setting,
            records,
            prompts,
            model,
            data_dir,
            circular=bool(cfg.get("circular")),
            dev_items=dev.to_dict("records"),
            descriptions=descriptions,
            captions=captions,
        )
        if log:
            log.info(f"{name} × {model.name} × {setting.name}: {len(reqs)} requests")
        results = engine.run(stage, part, [r.request for r in reqs])
        srows = rq.prediction_rows(model.name, spec, setting, split_of, reqs, results, scoring)
        unparseable_open_ended(spec, srows)
        judge_rows(spec, srows, by_id, judge, part, model, scoring)
        if spec.eval.similarity or spec.eval.text_metrics:
            similarity_scores(spec, srows, by_id, embedder, bcfg.get("thresholds") or {}, bcfg)
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
    scores = pd.DataFrame(score_benchmark(spec, preds_for_scores, items, sc, scoring))
    if len(scores):
        scores.insert(0, "model", model.name)
        scores.insert(1, "benchmark", name)
        scores["split"] = split
        scores["backend"] = model.backend
    meta["scored_items"] = int(preds["item_id"].nunique()) if len(preds) else 0
    return preds, scores, meta
