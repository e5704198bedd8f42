"""ViMU recipe assets (group ``vimu``): vimu_annotations → vimu_questions → vimu_items.

Per batch of clips: Stage 1–2 taxonomy annotation from the clip's evidence bundle, Stage 3–4
hint-free question generation through the engine's validate-and-refine loop, Stage 5 the four
benchmark items (OE, EG, RM, SV). Logic lives in ``assets/recipes/vimu/logic``; these bodies read,
call and publish.

Stub output (``forge.llm.stub.advisory``): the annotation's external-context / ambiguity flags,
the hint-leak check and the validator's verdict on placeholder text are recorded (the flag
columns, ``llm_attempts`` rows marked advisory) but never filter, so the demo yields items.
"""

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets.common import Progress, StageRun
from assets.recipes.asset_builder import recipe_asset
from forge.benchmarks.settings import config_default, recipe_settings, with_profile
from forge.llm.prompts import load_prompt, prompt_files_hash
from forge.llm.refine import refine
from forge.llm.stub import ADVISORY_NOTE, advisory
from forge.provenance.versioning import content_hash
from forge.review import regenerate
from forge.splits.config import stage_settings
from forge.storage import RejectLog, TableStore
from resources.llm import LLMResource
from resources.storage import StorageResource

from .logic import annotate as ann
from .logic import items as itm
from .logic import questions as qs
from .logic.taxonomy import TAXONOMY_PATH, load_taxonomy
from .spec import SPEC as VIMU

VERSION = "vimu-1"
GROUP = "vimu"
PROMPTS = Path(__file__).resolve().parent / "prompts"


def settings() -> dict[str, Any]:
    """assets/recipes/vimu/config.yaml under the active profile (read per use: a profile change applies)."""
    return recipe_settings("vimu")


ANNOTATE_PROMPT = PROMPTS / "annotate.yaml"
GENERATE_PROMPT = PROMPTS / "generate_qa.yaml"
REFINE_PROMPT = PROMPTS / "refine_qa.yaml"
VALIDATE_PROMPT = PROMPTS / "validate_qa.yaml"
QA_PROMPTS = [GENERATE_PROMPT, REFINE_PROMPT, VALIDATE_PROMPT]
ALL_PROMPTS = [ANNOTATE_PROMPT, *QA_PROMPTS]


def items_prompt_hash() -> str:
    """What an item's ``prompt_hash`` is: one hash over the four prompts that made it."""
    return prompt_files_hash(ALL_PROMPTS)


class AnnotateConfig(dg.Config):
    max_clips_per_batch: int | None = config_default("vimu", "annotate", "max_clips_per_batch")  # None = every clip
    max_frames: int = config_default("vimu", "annotate", "max_frames", 8)
    drop_requires_external_context: bool = config_default("vimu", "annotate", "drop_requires_external_context", True)
    drop_ambiguous: bool = config_default("vimu", "annotate", "drop_ambiguous", True)
    # "Regenerate rejected" (docs/review.md): an RM / SV / EG item rejected as wrong_gold asks Stage 2
    # again (new seed) for that task's labels only (logic/annotate.py regold). False replays the first.
    regenerate_rejected: bool = True


class QuestionsConfig(dg.Config):
    max_rounds: int = config_default("vimu", "questions", "max_rounds", 3)
    hint_axes: list[str] = config_default(
        "vimu", "questions", "hint_axes", ["dimension", "rhetoric", "social_value", "evidence"]
    )
    warn_loss_rate: float = config_default("vimu", "questions", "warn_loss_rate", 0.5)
    # "Regenerate rejected" (docs/review.md): clips whose items reviewers rejected are asked again
    # with a new seed (the others come from the cache). False replays the first, rejected replies.
    regenerate_rejected: bool = True


def _videos(store: TableStore, batch: str) -> "pd.DataFrame | None":
    df = store.read_batch("videos", batch)
    return df if len(df) else None


# -- Stage 1–2 -------------------------------------------------------------------------------
@recipe_asset(
    group=GROUP,
    llm=True,
    kinds=("parquet",),
    deps=["evidence", "frames", "clips"],
    code_version=content_hash(VERSION, settings().get("annotate"), files=[ANNOTATE_PROMPT, TAXONOMY_PATH]),
    description="ViMU Stage 1-2: taxonomy annotation per clip (literal vs intended meaning, rhetoric mechanisms, "
    "social value signals, evidence sources, targets) from uniformly sampled frames + transcript.",
)
def vimu_annotations(
    context: dg.AssetExecutionContext, config: AnnotateConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, llm)
    store, engine = run.store, run.engine
    tax, prompt = load_taxonomy(), load_prompt(ANNOTATE_PROMPT)
    # read, not a dep: the verdicts are downstream of these annotations (a dep would be a cycle)
    wrong = (
        regenerate.regenerations(store, VIMU, stage_settings(VIMU).review_settings(), "vimu_annotations")
        if config.regenerate_rejected
        else {}
    )

    def annotate(batch: str, log: RejectLog) -> int:  # batches run at once on the engine's one budget
        bundles = ann.clip_bundles(
            store.read_batch("evidence", batch),
            store.read_batch("frames", batch),
            store.read_batch("clips", batch),
            _videos(store, batch),
            config.max_frames,
        )
        cap = len(bundles) if config.max_clips_per_batch is None else config.max_clips_per_batch
        for b in bundles[cap:]:
            log.add(b.clip_id, "over_batch_cap", detail=f"max_clips_per_batch={cap}")
        bundles = bundles[:cap]
        usable = []
        for b in bundles:
            if b.frame_paths:
                usable.append(b)
            else:
                log.add(b.clip_id, "no_frames", detail="the clip has no clip_frame frames")
        progress = Progress(context.log, f"vimu_annotations[{batch}]", len(usable))
        requests = [ann.annotation_request(prompt, tax, b, store.data_dir) for b in usable]
        results = engine.run("vimu_annotations", batch, requests)
        gold = _regenerated_gold(engine, batch, tax, usable, requests, wrong)
        rows, notes = [], 0
        for b, res in zip(usable, results):
            progress.step()
            if not res.ok:
                log.add(b.clip_id, "llm_failed", res.error_class or "", res.error or "")
                continue
            try:
                row = ann.parse_annotation(tax, b, res)
            except ann.AnnotationError as exc:
                log.add(b.clip_id, exc.reason, "AnnotationError", str(exc))
                continue
            # Placeholder booleans from the stub are not judgments: recorded in the row, never applied.
            if not advisory(res):
                if config.drop_requires_external_context and row["requires_external_context"]:
                    log.add(b.clip_id, "requires_external_context", detail=row["intended_meaning"])
                    continue
                if config.drop_ambiguous and row["ambiguous"]:
                    log.add(b.clip_id, "ambiguous", detail=row["intended_meaning"])
                    continue
            if b.clip_id in gold:  # the tasks a reviewer sent back get the new reply's labels
                row = ann.regold(row, gold[b.clip_id][0]) | {"gold_attempts": json.dumps(gold[b.clip_id][1])}
            notes += bool(row["label_notes"])
            rows.append(row)
        run.put(batch, rows)
        return notes

    notes = sum(run.map_partitions(annotate))
    all_rows = run.frame()
    md = {
        "annotated": len(all_rows),
        "label_conflicts_resolved": notes,
        "rhetoric_macro_counts": dg.MetadataValue.json(_explode_counts(all_rows, "rhetoric_macros")),
        "social_value_macro_counts": dg.MetadataValue.json(_explode_counts(all_rows, "social_value_macros")),
        "evidence_macro_counts": dg.MetadataValue.json(_explode_counts(all_rows, "evidence_macros")),
        "prompt_hash": prompt.hash,
        "regenerated_gold_clips": len(wrong),  # clips whose RM / SV / EG gold reviewers sent back (seed = attempt)
    }
    return run.publish(md)


def _regenerated_gold(
    engine: Any, batch: str, tax: Any, usable: list, requests: list, wrong: dict
) -> dict[str, tuple[dict[str, dict[str, Any]], dict[str, int]]]:
    """clip -> (task -> the annotation row of its regenerated reply, task -> attempt) for the clips
    whose RM / SV / EG gold reviewers rejected: one request per distinct attempt, its seed moved by
    it (``forge/review/regenerate.py``). A reply that fails or breaks the taxonomy keeps the first
    gold: the item stays as rejected, and the export drops it."""
    asks = []  # (clip evidence, attempt, tasks, request)
    for b, req in zip(usable, requests):
        tasks = itm.gold_tasks(b.clip_id, wrong.get(b.clip_id))
        for n in sorted(set(tasks.values())):
            asks.append((b, n, [t for t, k in tasks.items() if k == n], regenerate.bump([req], {b.clip_id: n})[0]))
    results = engine.run("vimu_annotations", batch, [a[3] for a in asks]) if asks else []
    out: dict[str, tuple[dict[str, dict[str, Any]], dict[str, int]]] = {}
    for (b, n, tasks, _), res in zip(asks, results):
        replies, tries = out.setdefault(b.clip_id, ({}, {}))
        try:
            row = ann.parse_annotation(tax, b, res) if res.ok else None
        except ann.AnnotationError:
            row = None
        for t in tasks:
            tries[t] = n
            if row is not None:
                replies[t] = row
    return out


def _explode_counts(df: pd.DataFrame, col: str) -> dict[str, int]:
    if df.empty or col not in df.columns:
        return {}
    return {str(k): int(v) for k, v in df[col].explode().dropna().value_counts().sort_index().items()}


# -- Stage 3–4 -------------------------------------------------------------------------------
@recipe_asset(
    group=GROUP,
    llm=True,
    kinds=("parquet",),
    deps=["vimu_annotations"],
    code_version=content_hash(VERSION, settings().get("questions"), files=[*QA_PROMPTS, TAXONOMY_PATH]),
    checks={
        "refine_outcomes": "Validate-and-refine outcomes with rates: accepted after round 0..K, "
        "rejected by the validator, exhausted (still major after K), failed."
    },
    description="ViMU Stage 3-4: hint-free open question + reference answer + points per clip, validated and "
    "refined (pass/minor accept, major regenerate with feedback, reject discard, K rounds); the code "
    "hint-leak check counts as a major verdict.",
)
def vimu_questions(
    context: dg.AssetExecutionContext, config: QuestionsConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    stage = StageRun(context, storage, llm)
    store, engine = stage.store, stage.engine
    tax = load_taxonomy()
    gen_p, ref_p, val_p = (load_prompt(p) for p in QA_PROMPTS)
    terms = tax.hint_terms(tuple(config.hint_axes))
    # read, not a dep: the verdicts are downstream of these questions (a dep would be a cycle)
    tries = (
        regenerate.attempts(store, VIMU, stage_settings(VIMU).review_settings(), "vimu_questions")
        if config.regenerate_rejected
        else {}
    )

    def generate(batch: str, log: RejectLog):  # batches run at once on the engine's one budget
        annotations = {r["clip_id"]: r for r in store.read("vimu_annotations", parts=[batch]).to_dict("records")}
        requests = regenerate.bump([qs.generation_request(gen_p, a, terms) for a in annotations.values()], tries)
        run = refine(
            engine,
            "vimu_questions",
            batch,
            requests,
            checks=qs.qa_checks(terms),  # English first (wrong_language), then hint-free
            judge=qs.judge_builder(val_p),
            parse_verdict=qs.verdict_from_validation,
            revise=qs.reviser(ref_p),
            max_rounds=config.max_rounds,
        )
        qs.add_rejects(run, log)
        stage.add_attempts(run.attempts_frame())
        stage.put(batch, [qs.question_row(o, annotations[o.item_id], val_p.hash) for o in run.accepted()])
        return run

    runs = stage.map_partitions(generate)
    stats = qs.outcome_stats(runs, config.max_rounds)
    md: dict[str, Any] = {"refine_" + k: v for k, v in stats.items()}
    md["hint_terms"] = len(terms)
    md["regenerated_clips"] = len(tries)  # clips asked again for rejected items (seed = attempt)
    result = stage.publish(md, record_attempts=True)
    lost = stats["exhausted_rate"] + stats["failed_rate"]
    outcome_check = dg.AssetCheckResult(
        check_name="refine_outcomes",
        passed=lost <= config.warn_loss_rate,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={k: (dg.MetadataValue.float(float(v)) if isinstance(v, float) else v) for k, v in stats.items()},
    )
    return dg.MaterializeResult(
        metadata=result.metadata,
        check_results=[*result.check_results, outcome_check],
        data_version=result.data_version,
    )


# -- Stage 5 ---------------------------------------------------------------------------------
@recipe_asset(
    group=GROUP,
    kinds=("parquet",),
    deps=["vimu_annotations", "vimu_questions"],
    code_version=content_hash(VERSION, files=[TAXONOMY_PATH, itm.TASK_PROMPTS_PATH, *ALL_PROMPTS]),
    description="ViMU Stage 5: four items per clip with an accepted question: open-ended (OE) and multi-select "
    "evidence grounding (EG), rhetoric mechanism (RM), social value (SV) over the 5 macro options; "
    "App. G guided / unguided prompt variants in extra.",
)
def vimu_items(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    tax, prompts, phash = load_taxonomy(), itm.load_task_prompts(), items_prompt_hash()
    for batch, log in run.partitions():
        annotations = {r["clip_id"]: r for r in store.read("vimu_annotations", parts=[batch]).to_dict("records")}
        rows: list[dict[str, Any]] = []
        for q in store.read("vimu_questions", parts=[batch]).to_dict("records"):
            a = annotations.get(q["clip_id"])
            if a is None:
                log.add(q["question_id"], "annotation_missing", detail=f"clip {q['clip_id']} has no annotation")
                continue
            built, skipped = itm.build_items(tax, a, q, prompt_hash=phash, prompts=prompts)
            rows += built
            for iid, reason, detail in skipped:
                log.add(iid, reason, detail=detail, related_id=q["clip_id"])
        run.put(batch, with_profile(pd.DataFrame(rows), "vimu"))
    allrows = run.frame()
    md: dict[str, Any] = {"prompt_hash": phash}
    if len(allrows):
        md["backend"] = ", ".join(sorted(allrows["backend"].unique()))
        if allrows["backend"].map(advisory).any():
            md["stub_verdicts"] = ADVISORY_NOTE
    run.show_items()
    by_category = run.describe(
        lambda df: {"items_by_category": dg.MetadataValue.json(df["category"].value_counts().sort_index().to_dict())}
    )
    return run.publish({**md, **by_category})
