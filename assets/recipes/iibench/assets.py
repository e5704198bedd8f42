"""II-Bench (ii-bench.md §3.2, App. B): per image, after the trunk's dedup and OCR filter.

iibench_implication  LLM judge (or the human verdict table) keeps images with an implication
iibench_labels       type / domain / emotion / rhetoric / difficulty + explanation (refined)
iibench_items        1-3 six-option questions per image, distractor-checked (refined)

Stub output (``forge.llm.stub.advisory``): the implication verdict, label checks, duplicate
options and the distractor judge on placeholder text are recorded (``advisory`` column,
``extra.advisory``, ``llm_attempts``) but never drop an image or a question.
"""

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets.common import StageRun, sum_counts
from assets.recipes.asset_builder import recipe_asset
from forge.benchmarks.settings import config_default, recipe_settings, with_profile
from forge.benchmarks.spec import ROOT
from forge.checks.language import language_first, wrong_language_outcome
from forge.llm.prompts import load_prompt
from forge.llm.refine import Verdict, refine
from forge.llm.stub import ADVISORY_NOTE, advisory
from forge.llm.types import ImageInput, LLMRequest
from forge.protocol import flow, steps
from forge.provenance.versioning import content_hash
from forge.review import regenerate
from forge.splits.config import stage_settings
from forge.storage import RejectLog, TableStore
from resources.llm import LLMResource
from resources.storage import StorageResource

from .logic import implication as imp
from .logic import items as it
from .logic import protocol as proto
from .logic import taxonomy as tax
from .spec import SPEC as IIBENCH

VERSION = "1"
GROUP = "iibench"

PROMPTS = Path(__file__).with_name("prompts")
P_IMPLICATION = PROMPTS / "implication.yaml"
P_LABELS = PROMPTS / "labels.yaml"
P_QUESTIONS = PROMPTS / "questions.yaml"
P_JUDGE = PROMPTS / "distractor_judge.yaml"


def settings() -> dict[str, Any]:
    """assets/recipes/iibench/config.yaml under the active profile (read per use: a profile change applies)."""
    return recipe_settings("iibench")


class ImplicationConfig(dg.Config):
    human_verdicts: str | None = config_default("iibench", "implication", "human_verdicts")
    max_images_per_batch: int | None = config_default("iibench", "implication", "max_images_per_batch")


class LabelsConfig(dg.Config):
    max_rounds: int = config_default("iibench", "labels", "max_rounds")
    min_explanation_chars: int = config_default("iibench", "labels", "min_explanation_chars")


class ItemsConfig(dg.Config):
    questions_per_image: int | None = config_default("iibench", "items", "questions_per_image")  # None = 1-3
    max_rounds: int = config_default("iibench", "items", "max_rounds")
    near_duplicate_threshold: float = config_default("iibench", "items", "near_duplicate_threshold")
    seed: int = config_default("iibench", "items", "seed")
    # "Regenerate rejected" (docs/review.md): images whose reviewers rejected items of are asked again
    # with a new seed (the others come from the cache). False replays the first, rejected replies.
    regenerate_rejected: bool = True


def _image(store: TableStore, row: Any) -> ImageInput:
    return ImageInput(path=store.data_dir / row["path"])


def _read_for(store: TableStore, table: str, batch: str, ids: list[str]) -> pd.DataFrame:
    """Rows of ``table`` for ``ids``: its batch partition when it is partitioned, else the table."""
    if not ids or not store.exists(table):
        return pd.DataFrame(columns=["frame_id"])
    if store.part_path(table, batch).exists():
        df = store.read(table, parts=[batch])
    else:
        df = store.read(table, where="list_contains(?, frame_id)", params=[list(ids)])
    df = df[df["frame_id"].isin(ids)]
    if "method" in df.columns:  # dedup may group a frame twice (frame and clip level): the frame verdict counts
        df = df.sort_values("method", key=lambda m: m != "frame", kind="stable")
    return df.drop_duplicates("frame_id")


def candidate_images(store: TableStore, batch: str, rejects: RejectLog) -> pd.DataFrame:
    """Image frames of the batch that dedup kept and the OCR text-ratio filter passed."""
    frames = store.read("frames", parts=[batch])
    if frames.empty:
        return frames
    frames = frames[frames["kind"] == "image"].sort_values("frame_id")
    ids = frames["frame_id"].tolist()
    dup = _read_for(store, "duplicates", batch, ids).set_index("frame_id")
    txt = _read_for(store, "text_ratio", batch, ids).set_index("frame_id")
    keep = []
    for fid in ids:
        if fid not in dup.index:
            rejects.add(fid, "not_deduplicated", detail="no row in `duplicates` (run dedup first)")
        elif not bool(dup.at[fid, "is_kept"]):
            rejects.add(
                fid, "duplicate", detail="dedup kept another copy", related_id=str(dup.at[fid, "kept_frame_id"])
            )
        elif fid not in txt.index:
            rejects.add(fid, "no_text_ratio", detail="no row in `text_ratio` (run the OCR filter first)")
        elif not bool(txt.at[fid, "passes"]):
            rejects.add(
                fid, "text_ratio_exceeded", detail=f"text covers {float(txt.at[fid, 'ratio']):.1%} of the image"
            )
        else:
            keep.append(fid)
    out = frames[frames["frame_id"].isin(keep)].copy()
    out["ocr_text"] = out["frame_id"].map(
        lambda f: str(txt.at[f, "text"]) if "text" in txt.columns and pd.notna(txt.at[f, "text"]) else ""
    )
    return out


# -- 5. implication filter --------------------------------------------------------------
@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["frames", "duplicates", "text_ratio"],
    code_version=content_hash(VERSION, settings()["implication"], files=[P_IMPLICATION]),
    reject_ceiling=1.0,  # its rejects include the trunk's duplicates and text-heavy images
    description="II-Bench Stage 3: keep images with a metaphorical or suggestive implication (LLM judge with "
    "reasons; a human verdict table overrides it). Dropped images → rejects (no_implication).",
)
def iibench_implication(
    context: dg.AssetExecutionContext, config: ImplicationConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, llm)
    store, engine = run.store, run.engine
    prompt = load_prompt(P_IMPLICATION)
    verdict_path = config.human_verdicts
    if verdict_path and not Path(verdict_path).is_absolute():
        verdict_path = str(ROOT / verdict_path)
    human = imp.load_human_verdicts(verdict_path)
    zero = {"candidates": 0, "kept": 0, "dropped": 0, "human": 0, "judge_failed": 0, "advisory": 0}

    def judge(part: str, rej: RejectLog) -> dict[str, int]:  # batches at once on the engine's one budget
        counts = dict(zero)
        cands = candidate_images(store, part, rej)
        if config.max_images_per_batch is not None:
            cands = cands.head(config.max_images_per_batch)
        rows, ask = [], []
        for r in cands.to_dict("records"):
            base = {k: r[k] for k in ("frame_id", "batch", "item_id", "source", "path")} | {"ocr_text": r["ocr_text"]}
            hv = imp.human_verdict_for(human, r["frame_id"], r["item_id"])
            if hv is not None:
                rows.append(
                    base
                    | {
                        "keep": hv.keep,
                        "origin": "human",
                        "implication": None,
                        "reason": hv.note,
                        "prompt_name": None,
                        "prompt_hash": None,
                        "model": "human",
                        "backend": "human",
                        "advisory": None,
                    }
                )
            else:
                ask.append(
                    (
                        base,
                        LLMRequest(
                            r["frame_id"], prompt, {"ocr_text": r["ocr_text"] or "(none)"}, images=[_image(store, r)]
                        ),
                    )
                )
        results = engine.run("iibench_implication", part, [q for _, q in ask])
        for (base, _), res in zip(ask, results):
            if not res.ok:
                rej.add(base["frame_id"], "judge_failed", res.error_class or "", res.error or "")
                counts["judge_failed"] += 1
                continue
            keep, implication, reason = imp.parse_judge(res.data or {})
            note = None
            if not keep and advisory(res):  # a placeholder verdict: recorded, the image stays
                keep, note = True, json.dumps([f"no_implication: {reason}"])
                counts["advisory"] += 1
            rows.append(
                base
                | {
                    "keep": keep,
                    "origin": "llm",
                    "implication": implication,
                    "reason": reason,
                    "prompt_name": res.prompt_name,
                    "prompt_hash": res.prompt_hash,
                    "model": res.model,
                    "backend": res.backend,
                    "advisory": note,
                }
            )
        for row in rows:
            if not row["keep"]:
                rej.add(row["frame_id"], "no_implication", detail=f"[{row['origin']}] {row['reason'] or ''}".strip())
        df = run.put(part, rows)
        counts["candidates"] += len(cands)
        counts["kept"] += int(df["keep"].sum()) if len(df) else 0
        counts["dropped"] += int((~df["keep"].astype(bool)).sum()) if len(df) else 0
        counts["human"] += int((df["origin"] == "human").sum()) if len(df) else 0
        return counts

    counts = sum_counts(run.map_partitions(judge), zero)
    judged = counts["kept"] + counts["dropped"]
    md = {f"images_{k}": v for k, v in counts.items()}
    md["keep_rate"] = round(counts["kept"] / judged, 4) if judged else 0.0
    md["human_override_rate"] = round(counts["human"] / judged, 4) if judged else 0.0
    return run.publish(md)


# -- 6. labels --------------------------------------------------------------------------
def labels_check(min_chars: int):
    def labels_valid(_req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        _, problems = tax.validate_labels(data)
        n = len(" ".join(str(data.get("explanation") or "").split()))
        if n < min_chars:
            problems.append(f"explanation: {n} characters; explain the implication in at least {min_chars}")
        return Verdict("major", "\n".join(problems), "labels_valid") if problems else None

    return labels_valid


LANGUAGE = "en"  # II-Bench's explanations and questions are English (§3.2)


def label_checks(min_chars: int) -> list:
    """The explanation's language first (``wrong_language``), then the label / length checks."""
    return language_first(LANGUAGE, ["explanation"], [labels_check(min_chars)])


@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["iibench_implication"],
    code_version=content_hash(VERSION, settings()["labels"], files=[P_LABELS, tax.TAXONOMY_PATH]),
    description="II-Bench App. B.2 labels per kept image: image type, domain, emotion, rhetoric (multi), "
    "difficulty and the explanation of the implication; label sets validated in code, refined.",
)
def iibench_labels(
    context: dg.AssetExecutionContext, config: LabelsConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, llm)
    store, engine = run.store, run.engine
    prompt = load_prompt(P_LABELS)
    label_vars = {
        "image_types": tax.values("image_type"),
        "domains": tax.values("domain"),
        "emotions": tax.values("emotion"),
        "rhetorics": tax.values("rhetoric"),
        "difficulties": tax.values("difficulty"),
    }
    label_vars = {k: ", ".join(v) for k, v in label_vars.items()}
    inspected = steps.decisions(store, IIBENCH, proto.INSPECTION)
    dropped_by = flow.people_of(store, IIBENCH, proto.INSPECTION)  # who dropped an image (the rejects row)

    def label(part: str, rej: RejectLog) -> int:  # batches at once on the engine's one budget
        # people's inspection (protocol step) decides where they inspected: a dropped image is never labelled
        implication = store.read("iibench_implication", parts=[part])
        kept, seen = proto.kept_images(implication, inspected)
        run.note(part, **seen)
        for fid, who in flow.dropped_by_people(implication, "frame_id", inspected, dropped_by):
            rej.add(fid, flow.DROPPED, "ProtocolStep", f"inspection: dropped by {who}")
        by_id = {r["frame_id"]: r for r in kept.to_dict("records")}
        reqs = [
            LLMRequest(
                fid,
                prompt,
                label_vars | {"implication": r["implication"] or r["reason"] or "(not stated)"},
                images=[_image(store, r)],
            )
            for fid, r in by_id.items()
        ]
        loop = refine(
            engine,
            "iibench_labels",
            part,
            reqs,
            checks=label_checks(config.min_explanation_chars),
            max_rounds=config.max_rounds,
        )
        rows = []
        for o in loop.outcomes:
            if not o.accepted and wrong_language_outcome(o):
                rej.add(o.item_id, "wrong_language", "RefineReject", o.detail or "")
                continue
            if not o.accepted:
                reason = "invalid_labels" if o.reason == "max_rounds" else o.reason
                rej.add(o.item_id, reason, "RefineReject", o.detail or "")
                continue
            r, data = by_id[o.item_id], o.data or {}
            labels, _ = tax.validate_labels(data)
            rows.append(
                {k: r[k] for k in ("frame_id", "batch", "item_id", "source", "path")}
                | labels
                | {
                    "explanation": " ".join(str(data["explanation"]).split()),
                    "implication": r["implication"],
                    "rounds": o.rounds,
                    "prompt_name": o.result.prompt_name,
                    "prompt_hash": o.result.prompt_hash,
                    "model": o.result.model,
                    "backend": o.result.backend,
                    "decided_by": json.dumps(flow.decided_by({proto.INSPECTION: inspected}, r["frame_id"])),
                }
            )
        run.put(part, with_profile(pd.DataFrame(rows), "iibench"))
        run.add_attempts(loop.attempts_frame())
        return len(kept)

    n_in = sum(run.map_partitions(label))
    allrows = run.frame()
    n_out = len(allrows)
    md: dict[str, Any] = {
        "images_in": n_in,
        "labelled": n_out,
        "label_reject_rate": round(1 - n_out / n_in, 4) if n_in else 0.0,
    }
    if n_out:
        md["by_domain"] = dg.MetadataValue.json(allrows["domain"].value_counts().to_dict())
        md["by_image_type"] = dg.MetadataValue.json(allrows["image_type"].value_counts().to_dict())
    return run.publish(md, record_attempts=True)


# -- 7. items -----------------------------------------------------------------------------
def questions_check(threshold: float):
    def options_distinct(_req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        qs = [it.code_check(q, threshold) for q in it.parse_questions(data)]
        if any(q.problems for q in qs):
            return Verdict("major", it.set_feedback(qs), "options_distinct")
        return None

    return options_distinct


def judge_builder(prompt, explanations: dict[str, str]):
    def build(req: LLMRequest, data: dict[str, Any]) -> LLMRequest:
        qs = it.parse_questions(data)
        return LLMRequest(
            req.item_id,
            prompt,
            {"explanation": explanations[req.item_id], "questions": it.questions_text(qs)},
            images=list(req.images),
        )

    return build


def judge_verdict(data: dict[str, Any]) -> Verdict:
    """Set-level verdict: every question passes → pass; otherwise major (regenerate the failing ones).

    The judge reply carries no question text, so the per-question problems are recomputed by
    ``resolve_set`` from the attempts; here the feedback names the failing indices and why.
    """
    failing = []
    for v in data.get("questions") or []:
        q = it.apply_judge(it.Question("", "", [""] * it.N_DISTRACTORS), v)
        if q.problems:
            failing.append(f"Question {v.get('index')}: " + "; ".join(q.feedback))
    if not data.get("questions"):
        failing.append("the reviewer judged no question")
    return Verdict("major", "\n".join(failing), "judge") if failing else Verdict("pass", "", "judge")


@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["iibench_labels"],
    code_version=content_hash(VERSION, settings()["items"], files=[P_QUESTIONS, P_JUDGE]),
    description="II-Bench items: 1-3 single-answer questions per image with six options (one correct, five "
    "distractors about the implication's nuances), code-checked for duplicates and judged (each "
    "distractor plausible, none also correct), regenerated with feedback up to K rounds; seeded order.",
)
def iibench_items(
    context: dg.AssetExecutionContext, config: ItemsConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run = StageRun(context, storage, llm)
    store, engine = run.store, run.engine
    p_q, p_j = load_prompt(P_QUESTIONS), load_prompt(P_JUDGE)
    n_q = it.questions_wanted(config.questions_per_image)
    zero = {"images": 0, "questions_accepted": 0, "questions_rejected": 0, "images_rejected": 0, "refine_rounds": 0}
    # read, not a dep: the verdicts are downstream of these items (a dep would be a cycle)
    tries = (
        regenerate.attempts(store, IIBENCH, stage_settings(IIBENCH).review_settings(), "iibench_items")
        if config.regenerate_rejected
        else {}
    )
    inspected = steps.decisions(store, IIBENCH, proto.INSPECTION)
    human_labels = steps.decisions(store, IIBENCH, proto.LABELS)

    def generate(part: str, rej: RejectLog) -> tuple[dict[str, int], dict[str, int]]:  # batches at once, one budget
        stats, reasons = dict(zero), {}
        # people's labels (protocol step) replace the LLM's; an image they dropped at inspection is left out
        lab = proto.labelled(store.read("iibench_labels", parts=[part]), human_labels, inspected)
        recs = {r["frame_id"]: r for r in lab.to_dict("records")}
        stats["images"] += len(recs)
        reqs = []
        for fid, r in recs.items():
            labels_txt = json.dumps({k: (list(r[k]) if k == "rhetoric" else r[k]) for k in tax.AXES})
            reqs.append(
                LLMRequest(
                    fid,
                    p_q,
                    {"explanation": r["explanation"], "labels": labels_txt, "n_questions": n_q},
                    images=[_image(store, r)],
                )
            )
        loop = refine(
            engine,
            "iibench_items",
            part,
            regenerate.bump(reqs, tries),
            checks=[questions_check(config.near_duplicate_threshold)],
            judge=judge_builder(p_j, {f: r["explanation"] for f, r in recs.items()}),
            parse_verdict=judge_verdict,
            max_rounds=config.max_rounds,
        )
        rows = []
        for o in loop.outcomes:
            r = recs[o.item_id]
            stats["refine_rounds"] += o.rounds
            if o.reason in ("generation_failed", "judge_failed", "verdict_reject"):
                rej.add(o.item_id, o.reason, "RefineReject", o.detail or "")
                stats["images_rejected"] += 1
                reasons[o.reason] = reasons.get(o.reason, 0) + 1
                continue
            accepted, failed = it.resolve_set(
                o.attempts, config.near_duplicate_threshold, advisory=o.advisory is not None
            )
            for q in failed:
                code = it.primary_reason(q)
                rej.add(
                    it.item_id(o.item_id, q.question),
                    code,
                    "QuestionReject",
                    f"{q.question} — " + "; ".join(q.feedback),
                    related_id=o.item_id,
                )
                reasons[code] = reasons.get(code, 0) + 1
            if not accepted:
                stats["images_rejected"] += 1
            gen = o.result
            last_gen = [a for a in o.attempts if a["step"] == "generate" and a.get("output")][-1:] or [{}]
            judge_hash = next((a["prompt_hash"] for a in reversed(o.attempts) if a["step"] == "judge"), "")
            for q in accepted:
                labels = {k: (list(r[k]) if k == "rhetoric" else r[k]) for k in tax.AXES} | {
                    "explanation": r["explanation"]
                }
                row = it.build_item(q, r, labels, config.seed)
                extra = json.loads(row["extra"]) | {"judge_prompt_hash": judge_hash}
                extra["decided_by"] = flow.decided_by(
                    {proto.INSPECTION: inspected, proto.LABELS: human_labels}, o.item_id
                )  # who decided each protocol step this item was built on
                if q.problems:  # stub only: what the checks and the judge would have rejected it for
                    extra["advisory"] = [f"{c}: {f}" for c, f in zip(q.problems, q.feedback)] or q.problems
                row |= {
                    "extra": json.dumps(extra),
                    "backend": gen.backend if gen else last_gen[0].get("backend"),
                    "model": gen.model if gen else last_gen[0].get("model"),
                    "prompt_hash": gen.prompt_hash if gen else last_gen[0].get("prompt_hash"),
                }
                if all(x["item_id"] != row["item_id"] for x in rows):
                    rows.append(row)
        stats["questions_accepted"] += len(rows)
        stats["questions_rejected"] += sum(1 for x in rej.rows if x["error_class"] == "QuestionReject")
        run.put(part, with_profile(pd.DataFrame(rows), "iibench"))
        run.note(part, images=len(recs), questions_accepted=len(rows))
        run.add_attempts(loop.attempts_frame())
        return stats, reasons

    done = run.map_partitions(generate)
    stats, reasons = sum_counts((s for s, _ in done), zero), sum_counts(r for _, r in done)
    run.show_items()
    total_q = stats["questions_accepted"] + stats["questions_rejected"]
    md: dict[str, Any] = dict(stats)
    md["distractor_failure_rate"] = (
        round(sum(reasons.get(c, 0) for c in (it.ALSO_CORRECT, it.IMPLAUSIBLE)) / total_q, 4) if total_q else 0.0
    )
    md["duplicate_option_rate"] = round(reasons.get(it.DUPLICATE_OPTIONS, 0) / total_q, 4) if total_q else 0.0
    md["reject_reasons"] = dg.MetadataValue.json(reasons)
    md["regenerated_images"] = len(tries)  # images asked again for rejected items (seed = attempt)
    if any(advisory(b) for b in run.frame()["backend"]):
        md["stub_verdicts"] = ADVISORY_NOTE
    return run.publish(md, record_attempts=True)
