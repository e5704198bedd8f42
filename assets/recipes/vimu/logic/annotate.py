"""ViMU Stages 1–2: the clip's evidence bundle and its taxonomy annotation.

Stage 1 (App. A) is E_i = {uniformly sampled frames, transcript}: here the clip's
``clip_frame`` frames (subsampled uniformly to ``max_frames``) and the trunk's ``evidence`` row
(transcript, on-screen text, tags, persons). Stage 2 asks the LLM to separate literal content
from intended meaning and to label the subtext on the taxonomy axes; this module builds that
request and turns the reply into an annotation row, validating every label against
``taxonomy.yaml`` in code (the prompt's JSON schema enumerates the same labels; a test keeps
the two in sync).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from forge.items.cells import as_list
from forge.llm.types import ImageInput, LLMRequest, LLMResult

from .taxonomy import Taxonomy


@dataclass
class ClipEvidence:
    clip_id: str
    batch: str
    source: str
    item_id: str  # the video
    channel: str | None
    frame_ids: list[str]
    frame_paths: list[str]  # relative to the data dir, temporal order
    transcript: str
    transcript_status: str
    ocr_text: str
    tags: list[str] = field(default_factory=list)
    transcript_source: str = "none"  # subtitles | openai:<model> | faster-whisper | stub | none
    persons: int = 0
    duration_s: float | None = None


def uniform_pick(n: int, k: int) -> list[int]:
    """``k`` indices spread uniformly over ``range(n)`` (all of them when ``n <= k``)."""
    if k <= 0 or n <= 0:
        return []
    if n <= k:
        return list(range(n))
    if k == 1:
        return [n // 2]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return ""
    return str(v)


def clip_bundles(
    evidence: pd.DataFrame,
    frames: pd.DataFrame,
    clips: pd.DataFrame | None = None,
    videos: pd.DataFrame | None = None,
    max_frames: int = 8,
) -> list[ClipEvidence]:
    """One bundle per clip-level evidence row, with its uniformly sampled clip frames.

    A clip without frames still gets a bundle (``frame_paths`` empty); the asset rejects it.
    """
    ev = evidence[evidence["unit"] == "clip"] if len(evidence) else evidence
    fr = frames[frames["kind"] == "clip_frame"] if len(frames) else frames
    by_clip = {cid: g.sort_values("frame_index") for cid, g in fr.groupby("clip_id")} if len(fr) else {}
    clip_rows = {r["clip_id"]: r for r in clips.to_dict("records")} if clips is not None and len(clips) else {}
    chan_col = next(
        (c for c in ("channel", "uploader", "uploader_id") if videos is not None and c in videos.columns), None
    )
    id_col = (
        "item_id" if videos is not None and "item_id" in videos.columns else "video_id"
    )  # videos contract: video_id
    channels = dict(zip(videos[id_col], videos[chan_col])) if chan_col and videos is not None and len(videos) else {}
    out: list[ClipEvidence] = []
    for row in ev.sort_values("unit_id").to_dict("records") if len(ev) else []:
        cid = row["unit_id"]
        g = by_clip.get(cid)
        if g is not None and len(g):
            idx = uniform_pick(len(g), max_frames)
            sel = g.iloc[idx]
            frame_ids, paths = list(sel["frame_id"]), list(sel["path"])
            item_id = str(sel["item_id"].iloc[0])
        else:
            frame_ids, paths = [], []
            item_id = str(clip_rows.get(cid, {}).get("item_id") or cid)
        c = clip_rows.get(cid, {})
        dur = None
        if c.get("start_s") is not None and c.get("end_s") is not None:
            dur = round(float(c["end_s"]) - float(c["start_s"]), 2)
        chan = channels.get(item_id)
        out.append(
            ClipEvidence(
                clip_id=cid,
                batch=row["batch"],
                source=row["source"],
                item_id=item_id,
                channel=None if chan is None or (isinstance(chan, float) and pd.isna(chan)) else str(chan),
                frame_ids=frame_ids,
                frame_paths=paths,
                transcript=_text(row.get("transcript")),
                transcript_status=_text(row.get("transcript_status")) or "unknown",
                transcript_source=_text(row.get("transcript_source"))
                or ("subtitles" if row.get("transcript") else "none"),
                ocr_text=_text(row.get("ocr_text")),
                tags=[str(t) for t in as_list(row.get("tags"))],
                persons=int(row.get("persons") or 0),
                duration_s=dur,
            )
        )
    return out


def _bullets(items: list[str]) -> str:
    return "\n".join(f"  - {x}" for x in items)


def label_menu(tax: Taxonomy, axis: str) -> str:
    """The fine labels of one axis with their App. E / F definitions, as a prompt list."""
    ax = tax.axis(axis)
    return "\n".join(f"  - {lab.name}: {lab.definition}" if lab.definition else f"  - {lab.name}" for lab in ax.labels)


def evidence_menu(tax: Taxonomy) -> str:
    ax = tax.axis("evidence")
    return "\n".join(
        f"  - {ax.macro(lab.macro).name}: {ax.macro(lab.macro).definition}" for lab in ax.labels if lab.macro
    )


def transcript_origin(source: str) -> str:
    """How the annotator is told where the transcript came from (recognised speech can mishear)."""
    if source == "subtitles":
        return "from the video's subtitles"
    if source in ("none", ""):
        return "none available"
    if source == "stub":
        return "offline stub placeholder, not real speech"
    return f"automatic speech recognition, {source}"


def annotation_request(prompt: Any, tax: Taxonomy, ev: ClipEvidence, data_dir: Path) -> LLMRequest:
    transcript = ev.transcript.strip() or f"(none: {ev.transcript_status})"
    return LLMRequest(
        item_id=ev.clip_id,
        prompt=prompt,
        variables={
            "n_frames": len(ev.frame_paths),
            "duration_s": ev.duration_s if ev.duration_s is not None else "unknown",
            "transcript": transcript,
            "transcript_source": transcript_origin(ev.transcript_source),
            "ocr_text": ev.ocr_text.strip() or "(none detected)",
            "visual_tags": ", ".join(ev.tags[:30]) or "(none)",
            "persons": ev.persons,
            "rhetoric_labels": label_menu(tax, "rhetoric"),
            "social_value_labels": label_menu(tax, "social_value"),
            "evidence_sources": evidence_menu(tax),
            "target_kinds": _bullets(list(tax.target_kinds)),
        },
        images=[ImageInput(path=data_dir / p) for p in ev.frame_paths],
    )


class AnnotationError(ValueError):
    """The reply cannot become an annotation; ``reason`` is the reject code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def parse_annotation(tax: Taxonomy, ev: ClipEvidence, res: LLMResult) -> dict[str, Any]:
    """An annotation row from a successful reply; raises ``AnnotationError`` on invalid labels."""
    d = res.data or {}
    notes: list[str] = []
    rm = tax.check_labels("rhetoric", list(d.get("rhetoric_mechanisms") or []))
    sv = tax.check_labels("social_value", list(d.get("social_value_signals") or []))
    evidence = [e for e in (d.get("evidence") or []) if isinstance(e, dict)]
    es = tax.check_labels("evidence", [str(e.get("source", "")) for e in evidence])
    for name, chk in (("rhetoric", rm), ("social_value", sv), ("evidence", es)):
        if chk.unknown:
            raise AnnotationError("invalid_labels", f"{name}: not in the taxonomy: {chk.unknown}")
        if not chk.labels:
            raise AnnotationError("missing_labels", f"{name}: no label given")
        if chk.dropped_exclusive:
            notes.append(f"{name}: dropped {chk.dropped_exclusive} (contradicts the other labels)")
    targets = [t for t in (d.get("target_subjects") or []) if isinstance(t, dict)]
    bad_kinds = sorted({str(t.get("kind")) for t in targets if t.get("kind") not in tax.target_kinds})
    if bad_kinds:
        raise AnnotationError("invalid_labels", f"target kinds not in the taxonomy: {bad_kinds}")
    literal, intended = str(d.get("literal_content", "")).strip(), str(d.get("intended_meaning", "")).strip()
    if not literal or not intended:
        raise AnnotationError("missing_meaning", "literal_content or intended_meaning is empty")
    return {
        "clip_id": ev.clip_id,
        "batch": ev.batch,
        "source": ev.source,
        "item_id": ev.item_id,
        "channel": ev.channel,
        "frame_ids": list(ev.frame_ids),
        "media_paths": list(ev.frame_paths),
        "transcript": ev.transcript,
        "transcript_status": ev.transcript_status,
        "transcript_source": ev.transcript_source,
        "literal_content": literal,
        "intended_meaning": intended,
        "rhetoric_mechanisms": rm.labels,
        "social_value_signals": sv.labels,
        "evidence_sources": es.labels,
        "evidence": json.dumps(evidence, ensure_ascii=False),
        "target_subjects": json.dumps(targets, ensure_ascii=False),
        "target_kinds": sorted({str(t["kind"]) for t in targets}),
        "rhetoric_macros": tax.macro_letters("rhetoric", rm.labels),
        "social_value_macros": tax.macro_letters("social_value", sv.labels),
        "evidence_macros": tax.macro_letters("evidence", es.labels),
        "requires_external_context": bool(d.get("requires_external_context", False)),
        "ambiguous": bool(d.get("ambiguous", False)),
        "label_notes": "; ".join(notes) or None,
        "first_gold": None,  # set by ``regold`` when a reviewer sent a task's gold back
        "gold_attempts": None,
        "taxonomy_version": tax.version,
        "prompt_name": res.prompt_name,
        "prompt_hash": res.prompt_hash,
        "model": res.model,
        "backend": res.backend,
    }


# The gold of each choice task: the annotation fields Stage 5 builds its items from (App. C, D). A
# reviewer's ``wrong_gold`` on one of these items asks Stage 2 again for that task's fields only.
GOLD_FIELDS: dict[str, tuple[str, ...]] = {
    "RM": ("rhetoric_mechanisms", "rhetoric_macros"),
    "SV": ("social_value_signals", "social_value_macros"),
    "EG": ("evidence_sources", "evidence_macros", "evidence"),
}


def regold(first: dict[str, Any], replies: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``first`` (the annotation as first written) with the gold of each task in ``replies`` (task ->
    the annotation row of its regenerated reply) replaced, and nothing else: the intended meaning,
    the question asked from it and the OE item stay as reviewed. ``first_gold`` keeps the replaced
    fields' first values (``as_first``); ``gold_attempts`` says which tasks were asked again."""
    row = dict(first)
    kept: dict[str, Any] = {}
    for task, new in sorted(replies.items()):
        for f in GOLD_FIELDS[task]:
            kept[f] = _plain(first[f])
            row[f] = new[f]
    row["first_gold"] = json.dumps(kept, ensure_ascii=False) if kept else None
    return row


def as_first(row: dict[str, Any]) -> dict[str, Any]:
    """The annotation as first written (before any gold regeneration): what the clip's question
    and its OE item are made from."""
    first = row.get("first_gold")
    return {**row, **json.loads(first)} if isinstance(first, str) and first else row


def _plain(v: Any) -> Any:
    return v if isinstance(v, str | type(None)) else [x for x in v]


def annotation_for_prompt(row: dict[str, Any]) -> str:
    """The annotation as the QA prompts see it (no ids, no provenance): as first written, so a
    regenerated gold never changes the clip's question."""
    row = as_first(row)

    def load(v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v

    return json.dumps(
        {
            "literal_content": row["literal_content"],
            "intended_meaning": row["intended_meaning"],
            "rhetoric_mechanisms": list(row["rhetoric_mechanisms"]),
            "social_value_signals": list(row["social_value_signals"]),
            "evidence": load(row["evidence"]),
            "target_subjects": load(row["target_subjects"]),
            "transcript": row.get("transcript") or "",
        },
        ensure_ascii=False,
        indent=1,
    )
