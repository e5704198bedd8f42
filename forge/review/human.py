"""The human baseline: people answer the exported test items blind (no gold) in a second Label
Studio project per benchmark and export version; their answers are read as replies and scored by
the benchmark's own scorers (``forge/evals``), as model ``human`` with n and a bootstrap CI, the
way the papers report human performance (e.g. VAGUE §5.3, Table 2). Dagster-free.

Each task's earliest submitted answer is the reply (``human_answers`` > 1 collects more answers
per item; the extra ones are counted, not scored). Open-ended replies stay unscored: their
judge is an LLM, and a human baseline judged by a model is not what the papers report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, Setting, benchmark_block, load_eval_config, settings_for
from forge.evals.pipeline import load_export, prompt_files
from forge.evals.scoring import Scorer, score_benchmark
from forge.llm.prompts import load_prompt
from forge.llm.types import LLMResult
from forge.review import sync
from forge.review.client import LabelStudio
from forge.review.items import as_list, task_data
from forge.review.labelconfig import LETTERS, human_config
from forge.review.spec import ReviewPolicy
from forge.review.stages import StageOut, clip_paths, project_settings, read, settings
from forge.storage import TableStore

MODEL = "human"
HUMAN = ModelSpec(name=MODEL, model=MODEL, backend=MODEL, accepts="frames", max_frames=64)


def part(name: str) -> str:
    """The ``review_tasks`` file of a benchmark's human-baseline tasks."""
    return f"{name}__human"


def test_items(store: TableStore, spec: BenchmarkSpec) -> tuple[pd.DataFrame, str]:
    """The latest export's evaluated split, media paths relative to the data dir."""
    split = benchmark_block(load_eval_config(), spec)["split"]
    pub = load_export(store.data_dir / "exports", spec.name)
    items = pub.items
    if items.empty:
        return items, pub.version
    items = items[items["split"] == split].reset_index(drop=True)
    root = store.data_dir.resolve()
    items["media_paths"] = [[str(Path(p).resolve().relative_to(root)) for p in ps] for ps in items["media_paths"]]
    return items, pub.version


def run_human_tasks(store: TableStore, spec: BenchmarkSpec, ls: LabelStudio | None, note: str = "") -> StageOut:
    """Push the latest export's test items, blind; ``ls`` None (tool down, policy advisory): the
    recorded tasks stay, with ``note``."""
    rs = settings(spec)
    items, version = test_items(store, spec)
    prev = read(store, "review_tasks", part(spec.name))
    prev = prev if len(prev) else pd.DataFrame(columns=sync.TASK_COLUMNS)
    out = StageOut(metadata={"export_version": version or "none", "items": len(items)})
    if items.empty or ls is None or rs.policy == ReviewPolicy.OFF:
        out.metadata["note"] = note or (
            f"review policy off for {spec.name}"
            if rs.policy == ReviewPolicy.OFF
            else f"no exported {spec.name} test items yet: materialize `{spec.name}_export` first"
        )
        out.tables["review_tasks"] = prev
        return out
    ls.ensure_up()
    max_opts = max([len(as_list(o) or []) for o in items["options"]] + [2])
    title = f"{spec.title} human baseline · {spec.name} {version}"
    desc = f"Answer each {spec.title} item as you understand it (no gold shown); scored like a model."
    project = ls.ensure_project(title, human_config(rs, max_opts), **project_settings(rs, rs.human_answers, desc))
    ls.ensure_local_storage(int(project["id"]), str(store.data_dir.resolve() / "exports"))  # the published copies
    clips = clip_paths(store)
    wanted = {
        str(it["item_id"]): sync.Wanted(task_data(it, rs, clips.get(str(it.get("unit_id"))), "human"))
        for it in items.to_dict("records")
    }
    rows, counts = sync.push(ls, spec.name, "human", project, wanted, prev, set())
    out.tables["review_tasks"] = rows
    out.metadata["pushed"] = counts
    return out


def reply_of(annotation: dict[str, Any], kind: str, options: list[str]) -> str:
    """A submitted answer as the reply text the benchmark's reader parses."""
    letters, text = [], ""
    for r in annotation.get("result") or []:
        if r.get("from_name") == "choice":
            letters = [str(c) for c in (r.get("value") or {}).get("choices") or []]
        elif r.get("from_name") == "answer_text":
            t = (r.get("value") or {}).get("text") or []
            text = "\n".join(t if isinstance(t, list) else [str(t)]).strip()
    if letters and kind == "yesno":  # read by option text (Yes / No), not by letter
        return ", ".join(options[LETTERS.index(x)] for x in letters if LETTERS.index(x) < len(options))
    if letters and kind in ("mcq", "multi"):
        return ", ".join(sorted(letters))
    return text or ", ".join(letters)


def answers(ls: LabelStudio, task_rows: pd.DataFrame) -> tuple[dict[str, dict[str, Any]], int]:
    """item_id → its earliest submitted annotation; and how many answers there are in all."""
    by_kind, _ = sync.poll(ls, task_rows, ("human",))
    first: dict[str, dict[str, Any]] = {}
    total = 0
    for _pid, tasks in by_kind["human"]:
        for t in tasks:
            anns = sorted(
                (a for a in t.get("annotations") or [] if not a.get("was_cancelled")), key=lambda a: a["created_at"]
            )
            total += len(anns)
            if anns:
                first.setdefault(str(t["data"]["item_id"]), anns[0])
    return first, total


def visual_setting(spec: BenchmarkSpec, cfg: dict[str, Any]) -> Setting:
    """The setting people answer in: the media they see (most frames), zero-shot."""
    pool = [
        s for s in settings_for(cfg, spec) if s.input in ("frames", "image") and not s.shots and not s.variant
    ] or list(settings_for(cfg, spec))
    return max(pool, key=lambda s: (s.input == "frames", s.frames))


def score(store: TableStore, spec: BenchmarkSpec, ls: LabelStudio) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(eval_predictions rows, eval_scores rows, metadata) of model ``human``."""
    tasks = read(store, "review_tasks", part(spec.name))
    items, version = test_items(store, spec)
    if not len(tasks) or items.empty:
        return pd.DataFrame(), pd.DataFrame(), {"note": "no human-baseline tasks yet", "answered": 0}
    ls.ensure_up()
    first, total = answers(ls, tasks)
    cfg = load_eval_config()
    setting = visual_setting(spec, cfg)
    answered = items[items["item_id"].astype(str).isin(first)].to_dict("records")
    prompts = {p.name: load_prompt(p) for p in prompt_files(spec, cfg)}  # as forge.evals.pipeline.evaluate
    for task, fname in (benchmark_block(cfg, spec).get("prompts") or {}).items():
        prompts[f"task:{task}"] = prompts[fname]
    reqs, skipped = rq.build_requests(spec, setting, answered, prompts, HUMAN, store.data_dir)
    results = []
    for er in reqs:
        reply = reply_of(first[str(er.item["item_id"])], er.kind, list(er.options or []))
        results.append(
            LLMResult(er.request.item_id, True, {"text": reply}, reply, None, None, "human", "", MODEL, MODEL, False, 1)
        )
    scoring = dict(benchmark_block(cfg, spec).get("scoring") or {})
    split_of = {str(r["item_id"]): str(r.get("split") or "test") for r in answered}
    preds = pd.DataFrame(rq.prediction_rows(MODEL, spec, setting, split_of, reqs, results, scoring))
    if preds.empty:
        return preds, pd.DataFrame(), {"answered": len(first), "answers": total}
    for_scores = preds.copy()
    preds["detail"] = preds["detail"].map(lambda d: json.dumps(d, ensure_ascii=False, default=str))
    b = cfg.get("bootstrap") or {}
    sc = Scorer(int(b.get("n", 1000)), int(b.get("seed", 0)), float(b.get("alpha", 0.05)))
    scores = pd.DataFrame(score_benchmark(spec, for_scores, items, sc, scoring))
    if len(scores):
        scores.insert(0, "model", MODEL)
        scores.insert(1, "benchmark", spec.name)
        scores["split"] = setting_split(split_of)
        scores["backend"] = MODEL
    for frame in (preds, scores):
        if len(frame):
            frame["export_version"] = version
    md = {
        "setting": setting.name,
        "answered": len(first),
        "answers": total,
        "items": len(items),
        "skipped": len(skipped),
    }
    return preds, scores, md


def setting_split(split_of: dict[str, str]) -> str:
    return next(iter(set(split_of.values())), "test")
