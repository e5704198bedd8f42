"""MAIA's recipe steps that need no Dagster (maia.md §3.1, App. A.3-A.5): a batch's clip units,
the question rows, requests and checks (App. A.3), the question table's frame, a pool's statistics
row (App. A.4) and whether an answer was corrected by a person. The Dagster assets
(``assets.py``) read the batch, call these with the LLM engine and publish."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from forge.checks.text import pool_stats
from forge.llm.stub import advisory
from forge.llm.types import ImageInput, LLMRequest
from forge.storage import RejectLog, TableStore

from . import pool_flow as PF
from . import questions as Q
from .pools import Pool
from .taxonomy import CAUSAL, categories


def clip_units(store: TableStore, batch: str) -> list[dict[str, Any]]:
    """Clips of the batch (MAIA's engaging ~30 s window first) with their frames, evidence and channel."""
    clips = store.read_batch("clips", batch)
    if clips.empty:
        return []
    if "is_engaging" in clips.columns and clips["is_engaging"].any():
        clips = clips[clips["is_engaging"].astype(bool)]
    frames = store.read_batch("frames", batch)
    frames = frames[frames["kind"] == "clip_frame"] if len(frames) else frames
    ev = store.read_batch("evidence", batch)
    ev = ev[ev["unit"] == "clip"].set_index("unit_id").to_dict("index") if len(ev) else {}
    vids = store.read_batch("videos", batch)
    channel = {}
    if len(vids):
        for v in vids.to_dict("records"):
            channel[v["video_id"]] = v.get("channel") or v.get("uploader")
    out = []
    for c in clips.sort_values("clip_id").to_dict("records"):
        fr = frames[frames["clip_id"] == c["clip_id"]].sort_values("frame_index") if len(frames) else frames
        vid = c.get("video_id") or c.get("item_id")
        out.append(
            {
                "clip_id": c["clip_id"],
                "item_id": vid,
                "source": c.get("source"),
                "channel": channel.get(vid),
                "media_paths": [str(p) for p in fr["path"]] if len(fr) else [],
                "evidence": ev.get(c["clip_id"]),
            }
        )
    return out


def images(store: TableStore, paths: list[str], k: int) -> list[ImageInput]:
    return [ImageInput(path=store.data_dir / p) for p in Q.uniform_subsample(paths, k)]


def question_row(
    batch: str,
    u: dict[str, Any],
    cat: str,
    slot: str,
    text: str,
    origin: str,
    res: Any,
    answers: list[str] | None = None,
    causal_type: str | None = None,
) -> dict[str, Any]:
    return {
        "question_id": Q.question_id(u["clip_id"], cat, slot),
        "batch": batch,
        "clip_id": u["clip_id"],
        "source_item_id": u["item_id"],
        "source": u["source"],
        "category": cat,
        "macro_category": categories()[cat].macro,
        "causal_type": causal_type,  # causal only: explicit / implicit (App. A.2 fn. 10)
        "slot": slot,
        "question": text,
        "pair_overlap": None,
        "origin": origin,
        "imported_answers": answers if answers else None,
        "media_paths": u["media_paths"],
        "prompt_hash": res.prompt_hash if res else None,
        "model": res.model if res else "human",
        "backend": res.backend if res else "human",
    }


def question_request(
    prompt: Any, u: dict[str, Any], cat: str, imgs: list[ImageInput], ctypes: dict[str, str], draw: int, lang: str
) -> LLMRequest:
    """The (clip, category) request in the recipe's language ``lang``; a later draw differs only by
    its seed (a fresh reply)."""
    ctype = ctypes[u["clip_id"]] if cat == CAUSAL else None
    return LLMRequest(
        item_id=f"{u['clip_id']}:{cat}",
        prompt=prompt,
        images=imgs,
        variables={
            **Q.category_variables(cat, lang, ctype),
            "evidence": Q.evidence_text(u["evidence"]),
            "n_frames": len(imgs),
        },
        params={"seed": draw} if draw else {},
    )


def check_questions(
    kept: list[dict[str, Any]],
    fresh: list[dict[str, Any]],
    log: RejectLog,
    max_overlap: float,
    lang: str = "en",
    draw: int = 0,
) -> list[dict[str, Any]]:
    """``kept`` plus the ``fresh`` questions that pass: not in another language, not yes/no,
    audio-based or too short, and no B question repeating its A's focus (the fresh one of the pair
    goes; of two fresh ones, B). Stub questions are placeholders: their problems go to the
    ``advisory`` column, not to rejects."""
    ok = []
    note = f"draw {draw + 1}: " if draw else ""
    for r in fresh:
        problems = Q.question_problems(r["question"], lang=lang)
        r["advisory"] = problems if problems and advisory(r) else []
        if problems and not advisory(r):
            log.add(r["question_id"], problems[0], detail=note + r["question"])
        else:
            ok.append(r)
    out = list(kept)
    for r in ok:
        other = "b" if r["slot"] == "a" else "a"
        mate = next(
            (m for m in out if (m["clip_id"], m["category"], m["slot"]) == (r["clip_id"], r["category"], other)), None
        )
        if mate is not None and r["slot"] in Q.SLOTS and other in Q.SLOTS:
            a, b = (r, mate) if r["slot"] == "a" else (mate, r)
            ov = Q.pair_overlap(a["question"], b["question"], lang)
            if Q.same_focus(a["question"], b["question"], max_overlap, lang):
                if advisory(r):
                    r["advisory"].append(f"pair_same_focus: overlap {ov:.2f}")
                else:
                    log.add(
                        r["question_id"],
                        "pair_same_focus",
                        detail=f"{note}overlap {ov:.2f} with: {mate['question']}",
                        related_id=mate["question_id"],
                    )
                    continue
            a["pair_overlap"] = b["pair_overlap"] = ov
        out.append(r)
    return out


QUESTION_COLUMNS = [
    "question_id",
    "batch",
    "clip_id",
    "source_item_id",
    "source",
    "category",
    "macro_category",
    "causal_type",
    "slot",
    "question",
    "pair_overlap",
    "origin",
    "imported_answers",
    "media_paths",
    "prompt_hash",
    "model",
    "backend",
    "advisory",
]


def question_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    out = [{**r, "advisory": json.dumps(r["advisory"]) if r.get("advisory") else None} for r in rows]
    out.sort(key=lambda r: (r["clip_id"], r["category"], r["slot"]))
    return pd.DataFrame(out, columns=QUESTION_COLUMNS)


def stats_row(
    kind: str,
    p: Pool,
    q: dict[str, Any],
    status: str,
    reason: str | None,
    n_initial: int,
    extra: dict[str, Any],
    out: PF.PoolOutcome | None = None,
) -> dict[str, Any]:
    b, a = p.stats_before or pool_stats([]), p.stats_after or pool_stats([])
    row = {
        "kind": kind,
        "question_id": q["question_id"],
        "batch": q["batch"],
        "category": q["category"],
        "status": status,
        "reason": reason,
        "n_initial": n_initial,
        "n_final": len(p.kept_texts()) if status == "kept" else 0,
        "equal_pairs_before": b["equal_pairs"],
        "equal_pairs_after": a["equal_pairs"],
        "pairs_over_threshold_before": b["pairs_over_threshold"],
        "pairs_over_threshold_after": a["pairs_over_threshold"],
        "rephrased": sum(p.rephrased.values()),
        "rephrase_rounds": p.rounds,
        "reseeded": sum(out.reseeded.values()) if out else 0,
        "flagged": len(out.review) if out else 0,
        "review": json.dumps(out.review_reasons()) if out and out.review_reasons() else None,
    }
    for k in ("overlap_mean", "overlap_max", "overlap_mean_cw", "ttr", "ttr_cw"):
        row[f"{k}_before"], row[f"{k}_after"] = float(b[k]), float(a[k])
    row.update(extra)
    return row


def corrected(a: dict[str, Any]) -> bool:
    return isinstance(a.get("corrected_from"), str)
