"""The evidence bundle recipes read: per frame and per clip, who and what is visible, the
text on screen and what is said. One row per unit; every empty field says why.

What is said comes from the ``transcripts`` table (subtitles or recognised speech, with its
``transcript_source``) when it exists, else from the clips' subtitles."""

from __future__ import annotations

import pandas as pd

EVIDENCE_COLUMNS = [
    "unit",
    "unit_id",
    "batch",
    "source",
    "clip_id",
    "frame_ids",
    "tags",
    "persons",
    "person_labels",
    "annotated_paths",
    "ocr_text",
    "transcript",
    "transcript_status",
    "transcript_source",
    "tag_backend",
    "rich_selected",
]


def _ocr_by_frame(text_ratio: pd.DataFrame) -> dict[str, str]:
    if text_ratio.empty or "text" not in text_ratio:
        return {}
    return {f: (t or "").strip() for f, t in zip(text_ratio["frame_id"], text_ratio["text"]) if isinstance(t, str)}


def _clip_transcripts(
    clips: pd.DataFrame | None, transcripts: pd.DataFrame | None = None
) -> dict[str, tuple[str | None, str, str]]:
    """clip_id → (transcript, status, source): the transcripts table wins over the clips' subtitles."""
    out: dict[str, tuple[str | None, str, str]] = {}
    for df, from_table in ((clips, False), (transcripts, True)):
        if df is None or df.empty:
            continue
        for row in df.itertuples(index=False):
            t = getattr(row, "transcript", None)
            status = getattr(row, "transcript_status", None)
            t = t if isinstance(t, str) and t.strip() else None
            status = str(status) if isinstance(status, str) and status else ("ok" if t else "empty")
            source = getattr(row, "transcript_source", None) if from_table else ("subtitles" if t else "none")
            out[str(row.clip_id)] = (t, status, str(source or "none"))
    return out


def build_evidence(
    frames: pd.DataFrame,
    tags: pd.DataFrame,
    indicators: pd.DataFrame,
    text_ratio: pd.DataFrame,
    clips: pd.DataFrame | None,
    rich: pd.DataFrame,
    tag_backend: str,
    clips_status_if_missing: str = "clips_table_missing",
    transcripts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``frames``: frame_id, batch, source, clip_id, kind (the frames vision saw); ``transcripts``:
    the ``transcripts`` table's rows (None: the clips' subtitles only)."""
    if frames.empty:
        return pd.DataFrame(columns=EVIDENCE_COLUMNS)
    tag_lists: dict[str, list[str]] = {}
    if not tags.empty:
        t = tags.sort_values(["frame_id", "score", "tag"], ascending=[True, False, True])
        tag_lists = {f: list(dict.fromkeys(g["tag"])) for f, g in t.groupby("frame_id", sort=False)}
    labels: dict[str, list[str]] = {}
    paths: dict[str, str] = {}
    if not indicators.empty:
        ind = indicators.sort_values(["frame_id", "person_index"])
        labels = {f: list(g["label"]) for f, g in ind.groupby("frame_id", sort=False)}
        paths = {f: g["annotated_path"].iloc[0] for f, g in ind.groupby("frame_id", sort=False)}
    ocr = _ocr_by_frame(text_ratio)
    ocr_known = set(text_ratio["frame_id"]) if not text_ratio.empty else set()
    said = _clip_transcripts(clips, transcripts)
    selected = dict(zip(rich["frame_id"], rich["selected"])) if not rich.empty else {}

    def transcript_for(clip_id: object) -> tuple[str | None, str, str]:
        if not isinstance(clip_id, str) or not clip_id:
            return None, "no_audio_image", "none"
        if clips is None and transcripts is None:
            return None, clips_status_if_missing, "none"
        return said.get(clip_id, (None, "clip_not_found", "none"))

    rows = []
    for f in frames.sort_values("frame_id").itertuples(index=False):
        clip_id = f.clip_id if isinstance(getattr(f, "clip_id", None), str) else None
        transcript, status, said_by = transcript_for(clip_id)
        rows.append(
            {
                "unit": "frame",
                "unit_id": f.frame_id,
                "batch": f.batch,
                "source": f.source,
                "clip_id": clip_id,
                "frame_ids": [f.frame_id],
                "tags": tag_lists.get(f.frame_id, []),
                "persons": len(labels.get(f.frame_id, [])),
                "person_labels": labels.get(f.frame_id, []),
                "annotated_paths": [paths[f.frame_id]] if f.frame_id in paths else [],
                "ocr_text": ocr.get(f.frame_id, "") if f.frame_id in ocr_known else None,
                "transcript": transcript,
                "transcript_status": status,
                "transcript_source": said_by,
                "tag_backend": tag_backend,
                "rich_selected": bool(selected.get(f.frame_id, False)),
            }
        )
    frame_rows = pd.DataFrame(rows)
    clip_rows = []
    with_clip = frame_rows[frame_rows["clip_id"].notna()]
    for clip_id, g in with_clip.groupby("clip_id", sort=True):
        # Tags ordered by how many of the clip's frames show them; persons = the most seen at once.
        counts: dict[str, int] = {}
        for lst in g["tags"]:
            for t in lst:
                counts[t] = counts.get(t, 0) + 1
        best = g.loc[g["persons"].idxmax()]
        texts = list(dict.fromkeys(t for t in g["ocr_text"] if isinstance(t, str) and t))
        transcript, status, said_by = transcript_for(clip_id)
        clip_rows.append(
            {
                "unit": "clip",
                "unit_id": clip_id,
                "batch": g["batch"].iloc[0],
                "source": g["source"].iloc[0],
                "clip_id": clip_id,
                "frame_ids": list(g["unit_id"]),
                "tags": sorted(counts, key=lambda t: (-counts[t], t)),
                "persons": int(best["persons"]),
                "person_labels": list(best["person_labels"]),
                "annotated_paths": [p for lst in g["annotated_paths"] for p in lst],
                "ocr_text": "\n".join(texts) if g["ocr_text"].notna().any() else None,
                "transcript": transcript,
                "transcript_status": status,
                "transcript_source": said_by,
                "tag_backend": tag_backend,
                "rich_selected": bool(g["rich_selected"].any()),
            }
        )
    out = pd.concat([frame_rows, pd.DataFrame(clip_rows, columns=EVIDENCE_COLUMNS)], ignore_index=True)
    return out[EVIDENCE_COLUMNS]
