"""Hummus (hummus.md §4, §6): per image + caption pair.

hummus_pairs        image frames with their caption (table source) or an LLM caption when asked
hummus_annotations  Yes / No / WIDLII / Discard + metaphors, regions, caption span, explanation,
                    devices; validated in code, regenerated with feedback, else rejected
hummus_items        the six tasks of Table 1

Stub output (``forge.llm.stub.advisory``): the code checks on placeholder annotations (metaphor
format, boxes, span, explanation length) are recorded (``advisory`` column, ``llm_attempts``)
but never reject; what can be read is kept and items are built from it.
"""

import hashlib
import json
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets.common import StageRun, sum_counts
from assets.recipes.asset_builder import recipe_asset
from forge.benchmarks.settings import config_default, recipe_settings, with_profile
from forge.checks.language import language_first, wrong_language_outcome
from forge.llm.prompts import load_prompt
from forge.llm.refine import Verdict, refine
from forge.llm.stub import ADVISORY_NOTE
from forge.llm.types import ImageInput, LLMRequest
from forge.protocol import flow, steps
from forge.provenance.versioning import content_hash
from forge.review import regenerate
from forge.splits.config import stage_settings
from forge.storage import RejectLog
from resources.llm import LLMResource
from resources.storage import StorageResource

from .logic import annotations as A
from .logic import items as H
from .logic import protocol as HP
from .logic import review as HR
from .logic.taxonomy import TAXONOMY_PATH, devices
from .spec import SPEC as HUMMUS

VERSION = "2"  # 2: verdict-only rows keep Classification when the detail fails
GROUP = "hummus"
PROMPTS = Path(__file__).with_name("prompts")
P_CAPTION = PROMPTS / "caption.yaml"
P_ANNOTATE = PROMPTS / "annotate.yaml"
PAIR_COLS = [
    "frame_id",
    "batch",
    "item_id",
    "source",
    "path",
    "width",
    "height",
    "caption",
    "caption_origin",
    "prompt_hash",
    "model",
    "backend",
]


class PairsConfig(dg.Config):
    generate_captions: bool = config_default("hummus", "pairs", "generate_captions")
    max_pairs_per_batch: int | None = config_default("hummus", "pairs", "max_pairs_per_batch")  # None = all


class ItemsConfig(dg.Config):
    on_detail_failure: str = config_default("hummus", "items", "on_detail_failure", H.KEEP_CLASSIFICATION)


class AnnotationsConfig(dg.Config):
    max_rounds: int = config_default("hummus", "annotations", "max_rounds")
    explanation_max_words: int | None = config_default("hummus", "annotations", "explanation_max_words")
    # "Regenerate rejected" (docs/review.md): cartoons whose reviewers rejected items of are annotated asked again
    # with a new seed (the others come from the cache). False replays the first, rejected replies.
    regenerate_rejected: bool = True


@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["frames"],
    code_version=content_hash(VERSION, recipe_settings("hummus")["pairs"], files=[P_CAPTION]),
    description="Hummus inputs: image frames with their table-source caption; images without one get an LLM "
    "caption when generate_captions is on (caption_origin = llm), else are rejected (no_caption).",
)
def hummus_pairs(
    context: dg.AssetExecutionContext, config: PairsConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, llm)
    store, engine = run.store, run.engine
    prompt = load_prompt(P_CAPTION)

    def pair(part: str, rej: RejectLog) -> int:  # batches at once on the engine's one budget
        n_llm = 0
        frames = store.read("frames", parts=[part])
        frames = frames[frames["kind"] == "image"].sort_values("frame_id") if len(frames) else frames
        if config.max_pairs_per_batch is not None:
            frames = frames.head(config.max_pairs_per_batch)
        rows, ask = [], []
        for r in frames.to_dict("records"):
            base = {k: r[k] for k in PAIR_COLS[:7]}
            cap = r.get("caption")
            if isinstance(cap, str) and cap.strip():
                rows.append(
                    base
                    | {
                        "caption": cap.strip(),
                        "caption_origin": "source",
                        "prompt_hash": None,
                        "model": None,
                        "backend": None,
                    }
                )
            elif config.generate_captions:
                ask.append(
                    (base, LLMRequest(r["frame_id"], prompt, {}, images=[ImageInput(path=store.data_dir / r["path"])]))
                )
            else:
                rej.add(r["frame_id"], "no_caption", detail="image has no caption and generate_captions is off")
        for (base, _), res in zip(ask, engine.run("hummus_pairs", part, [q for _, q in ask])):
            cap = " ".join(str((res.data or {}).get("caption") or "").split()) if res.ok else ""
            if not cap:
                rej.add(base["frame_id"], "caption_failed", res.error_class or "", res.error or "empty caption")
                continue
            n_llm += 1
            rows.append(
                base
                | {
                    "caption": cap,
                    "caption_origin": "llm",
                    "prompt_hash": res.prompt_hash,
                    "model": res.model,
                    "backend": res.backend,
                }
            )
        run.put(part, rows)
        return n_llm

    return run.publish({"llm_captions": sum(run.map_partitions(pair))})


LANGUAGE = "en"  # Hummus is English (§4: The New Yorker's CapCon captions)
ANNOTATION_TEXT = ("incongruities", "resolution", "explanation", "discard_reason")


def annotation_id(frame_id: str, caption: str) -> str:
    return "hma_" + hashlib.sha1(f"{frame_id}\0{caption}".encode()).hexdigest()[:12]


def whole_pair_reject(o: Any, rej: RejectLog, reasons: dict[str, int]) -> bool:
    """A pair rejected whole (no verdict of it is kept): its text stayed in another language, or
    its verdict changed while revising (its last verdict is not the pair's)."""
    if wrong_language_outcome(o):
        rej.add(o.item_id, "wrong_language", "RefineReject", o.detail or "")
        reasons["wrong_language"] = reasons.get("wrong_language", 0) + 1
        return True
    if o.verdict is not None and o.verdict.source == A.VERDICT_CHANGED:
        rej.add(o.item_id, "verdict_changed", "RefineReject", o.detail or "")
        reasons["verdict_changed"] = reasons.get("verdict_changed", 0) + 1
        return True
    return False


def annotation_check(pairs: dict[str, dict[str, Any]], max_words: int | None, kept: dict[str, str] | None = None):
    """``kept``: frame → the verdict people decided (logic/review.py): a reply of the other class gets
    feedback to keep it instead of ``verdict_changed``; a kept No needs no details checked."""
    first: dict[str, str] = {}  # item → the verdict of its first generation (one item's rounds run in order)

    def annotation_valid(req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        p = pairs[req.item_id]
        verdict = str(data.get("verdict") or "")
        human = (kept or {}).get(req.item_id)
        if human is not None:
            if why := HR.kept_verdict_problem(human, verdict):
                return Verdict("major", why, HR.VERDICT_KEPT)
            if human not in H.POSITIVE:
                return None  # its details are dropped (logic/review.py keep_verdicts)
        elif not req.extra_messages:
            first[req.item_id] = verdict
        elif why := A.verdict_change(first.get(req.item_id), verdict):
            return Verdict("reject", why, A.VERDICT_CHANGED)
        _, problems = A.validate_annotation(data, p["caption"], int(p["width"]), int(p["height"]), max_words)
        return Verdict("major", problems.feedback(), "annotation_valid") if problems else None

    return annotation_valid


@recipe_asset(
    group=GROUP,
    llm=True,
    tables=("hummus_regions",),
    deps=["hummus_pairs"],
    code_version=content_hash(VERSION, recipe_settings("hummus")["annotations"], files=[P_ANNOTATE, TAXONOMY_PATH]),
    description="Hummus §4 annotation: Yes / No / WIDLII / Discard with incongruities; for Yes / WIDLII "
    "TARGET IS SOURCE metaphors, boxes (pixel + normalised, in hummus_regions), the caption span in "
    "<i></i> (exact substring), a short explanation; other figurative devices. Checked in code, "
    "regenerated with feedback, else rejected with the failing check as reason; a verdict changed while "
    "revising (other than WIDLII → No/Discard, §4.2) is rejected verdict_changed.",
)
def hummus_annotations(
    context: dg.AssetExecutionContext, config: AnnotationsConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, llm, tables=["hummus_annotations", "hummus_regions"])
    store, engine = run.store, run.engine
    prompt = load_prompt(P_ANNOTATE)
    # read, not a dep: the verdicts are downstream of these annotations (a dep would be a cycle)
    rs = stage_settings(HUMMUS).review_settings()  # the review settings in effect, once for this run
    tries = regenerate.attempts(store, HUMMUS, rs, "hummus_annotations") if config.regenerate_rejected else {}
    kept = HR.kept_verdicts(regenerate.reviewed(store, HUMMUS, rs))  # people's verdicts stay when written again

    def annotate(part: str, rej: RejectLog) -> tuple[dict[str, int], dict[str, int]]:  # batches at once, one budget
        pairs = {r["frame_id"]: r for r in store.read("hummus_pairs", parts=[part]).to_dict("records")}
        counts: dict[str, int] = {"pairs": len(pairs)}
        reasons: dict[str, int] = {}
        reqs = [
            LLMRequest(
                fid,
                prompt,
                {
                    "caption": p["caption"],
                    "width": int(p["width"]),
                    "height": int(p["height"]),
                    "devices": ", ".join(devices()),
                },
                images=[ImageInput(path=store.data_dir / p["path"])],
            )
            for fid, p in pairs.items()
        ]
        loop = refine(
            engine,
            "hummus_annotations",
            part,
            regenerate.bump(reqs, tries),
            # the benchmark's language first (§4: CapCon captions are English): text in another
            # language is wrong_language before any annotation check reads it
            checks=language_first(
                LANGUAGE, ANNOTATION_TEXT, [annotation_check(pairs, config.explanation_max_words, kept)]
            ),
            max_rounds=config.max_rounds,
        )
        rows, regions = [], []
        for o in loop.outcomes:
            p = pairs[o.item_id]
            detail: tuple[str, list[str]] | None = None  # (code, problems) when only the verdict is kept
            if not o.accepted and whole_pair_reject(o, rej, reasons):
                continue
            if not o.accepted:
                reason = o.reason
                gens = [a for a in o.attempts if a["step"] == "generate" and a.get("output")]
                last = json.loads(gens[-1]["output"]) if gens else None
                probs = None
                if o.reason == "max_rounds" and last is not None:  # the failing check's own code
                    _, probs = A.validate_annotation(
                        last, p["caption"], int(p["width"]), int(p["height"]), config.explanation_max_words
                    )
                    reason = probs.primary() or reason
                reasons[reason] = reasons.get(reason, 0) + 1
                ann = A.verdict_only(last) if probs is not None and reason != A.BAD_VERDICT else None
                if ann is None:  # no readable verdict: nothing of the pair can be used
                    rej.add(o.item_id, reason, "RefineReject", o.detail or "")
                    continue
                # Only the detailed annotation failed: the verdict stays for Classification
                # (hummus_items drops the detail tasks, or rebalances, per items.on_detail_failure).
                detail = (reason, [f"{c}: {m}" for c, m in probs.items])
                stub, result = False, gens[-1]
                meta = {k: result[k] for k in ("prompt_hash", "model", "backend")}
            else:
                stub = o.advisory is not None  # placeholder text: checks recorded, not applied
                ann, probs = A.validate_annotation(
                    HR.with_kept(o.data or {}, kept.get(o.item_id)),
                    p["caption"],
                    int(p["width"]),
                    int(p["height"]),
                    config.explanation_max_words,
                    lenient=stub,
                )
                if ann is None:  # no readable verdict even leniently
                    rej.add(o.item_id, probs.primary() or "invalid_annotation", "AnnotationError", probs.feedback())
                    continue
                meta = {"prompt_hash": o.result.prompt_hash, "model": o.result.model, "backend": o.result.backend}
            aid = annotation_id(o.item_id, p["caption"])
            rows.append(
                {
                    "annotation_id": aid,
                    **{k: p[k] for k in PAIR_COLS[:9]},
                    "verdict": ann.verdict,
                    "incongruities": ann.incongruities,
                    "resolution": ann.resolution,
                    "metaphors": ann.metaphors,
                    **A.text_fields(ann),
                    "devices": ann.devices,
                    "discard_reason": ann.discard_reason or None,
                    "n_regions": len(ann.regions),
                    "repairs": [] if detail else probs.repairs,
                    "rounds": o.rounds,
                    **meta,
                    "advisory": json.dumps([f"{c}: {m}" for c, m in probs.items]) if stub and probs else None,
                    "detail_reject": detail[0] if detail else None,
                    "detail_problems": detail[1] if detail else [],
                }
            )
            counts["advisory"] = counts.get("advisory", 0) + bool(stub and probs)
            counts["verdict_only"] = counts.get("verdict_only", 0) + bool(detail)
            regions += A.region_rows(aid, o.item_id, part, ann.regions, p["width"], p["height"])
            counts[ann.verdict] = counts.get(ann.verdict, 0) + 1
        for table, frame in zip(("hummus_annotations", "hummus_regions"), HR.keep_verdicts(rows, regions, kept)):
            run.put(part, frame, table)  # people's verdicts kept (logic/review.py)
        run.add_attempts(loop.attempts_frame())
        return counts, reasons

    done = run.map_partitions(annotate)
    counts, reasons = sum_counts((c for c, _ in done), {"pairs": 0}), sum_counts(r for _, r in done)
    n = counts["pairs"]
    n_adv = counts.pop("advisory", 0)
    n_verdict_only = counts.pop("verdict_only", 0)
    md: dict[str, Any] = {f"verdict_{k}": v for k, v in counts.items() if k != "pairs"} | {"pairs": n}
    if n_adv:
        md["stub_verdicts"] = ADVISORY_NOTE
        md["advisory_rows"] = n_adv
    for code in (A.INVALID_SPAN, A.BOX_OUT_OF_BOUNDS, A.BAD_METAPHOR, A.EXPLANATION_TOO_LONG):
        md[f"{code}_rate"] = round(reasons.get(code, 0) / n, 4) if n else 0.0
    md["reject_reasons"] = dg.MetadataValue.json(reasons)
    md["verdict_only"] = n_verdict_only  # detail failed, verdict kept for Classification
    md["regenerated_pairs"] = len(tries)  # cartoons annotated again for rejected items (seed = attempt)
    return run.publish(md, record_attempts=True)


@recipe_asset(
    group=GROUP,
    deps=["hummus_annotations"],
    code_version=content_hash(VERSION, H.INSTRUCTIONS, recipe_settings("hummus").get("items")),
    description="The six Hummus tasks of Table 1 (classification, naming, image_box, image_label, "
    "caption_highlight, explanation) built from the annotations; Discard items are not tested. A pair "
    "whose detailed annotation failed keeps its classification item (items.on_detail_failure: "
    "keep_classification) or is dropped with Yes/No-balancing partners (drop_balanced).",
)
def hummus_items(
    context: dg.AssetExecutionContext, config: ItemsConfig, storage: StorageResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    annotated = steps.decisions(store, HUMMUS, HP.ANNOTATION)  # the expert's annotation where one exists
    for part, rej in run.partitions():
        anns, regs = HP.annotated(
            store.read("hummus_annotations", parts=[part]), store.read("hummus_regions", parts=[part]), annotated
        )
        by_ann = {k: g.to_dict("records") for k, g in regs.groupby("annotation_id")} if len(regs) else {}
        sel = H.select_annotations(anns.to_dict("records"), config.on_detail_failure)
        for r in sel.rejects:
            rej.add(r["item_id"], r["reason"], "AnnotationDetail", r.get("detail", ""), r.get("related_id"))
        rows = [row for a in sel.kept for row in H.build_items(a, by_ann.get(a["annotation_id"], []))]
        items = flow.mark_items(pd.DataFrame(rows), flow.unit_in("extra", "annotation_id"), {HP.ANNOTATION: annotated})
        run.put(part, with_profile(items, "hummus"))
    run.show_items()

    def describe(df: pd.DataFrame) -> dict[str, Any]:
        cls = df[df["task"] == "classification"]
        return {
            "by_task": dg.MetadataValue.json(df["task"].value_counts().to_dict()),
            "classification_positive_share": round(float(cls["answer"].eq("A").mean()), 4) if len(cls) else 0.0,
        }

    return run.publish(run.describe(describe))
