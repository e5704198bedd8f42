"""Rich-scene ranking and the evidence bundle on small hand-made tables."""

from __future__ import annotations

import pandas as pd

from forge.vision.evidence import build_evidence
from forge.vision.scenes import RichSceneRule, count_persons, rank_rich_scenes
from forge.vision.tagger import tags_from_detections


def _frames():
    return pd.DataFrame(
        {
            "frame_id": ["c1_f000", "c1_f001", "c2_f000", "img_a"],
            "batch": ["s-0000"] * 4,
            "source": ["s"] * 4,
            "clip_id": ["c1", "c1", "c2", None],
            "kind": ["clip_frame", "clip_frame", "clip_frame", "image"],
        }
    )


def _dets():
    rows = []

    def add(f, cls, conf):
        rows.append({"frame_id": f, "batch": "s-0000", "class_name": cls, "confidence": conf})

    for c in (0.9, 0.8):
        add("c1_f000", "person", c)
    add("c1_f000", "cup", 0.5)
    add("c1_f000", "chair", 0.4)
    add("c1_f001", "person", 0.7)
    add("c2_f000", "dog", 0.6)
    add("c2_f000", "cup", 0.6)
    add("c2_f000", "chair", 0.6)
    return pd.DataFrame(rows)


def test_yolo_tags_count_boxes_per_class():
    t = tags_from_detections(_dets(), "yolo11n@abc")
    row = t[(t.frame_id == "c1_f000") & (t.tag == "person")].iloc[0]
    assert (row["count"], row["score"], row["backend"]) == (2, 0.9, "yolo")
    assert set(t[t.frame_id == "c2_f000"].tag) == {"dog", "cup", "chair"}


def test_rich_scenes_rank_and_rules():
    frames, det = _frames(), _dets()
    tags = tags_from_detections(det, "v")
    persons = count_persons(det)
    r = rank_rich_scenes(frames, tags, persons, RichSceneRule(min_persons=1, min_tags=1, top_n=None, top_fraction=None))
    r = r.set_index("frame_id")
    # c1_f000 has 3 distinct tags + 2 persons; c2_f000 3 tags but 0 persons; c1_f001 1 tag
    assert r.loc["c1_f000", "rank"] == 1 and r.loc["c2_f000", "rank"] == 2
    assert r.loc["c1_f000", "selected"] and r.loc["c1_f001", "selected"]
    assert not r.loc["c2_f000", "selected"] and r.loc["c2_f000", "reason"] == "too_few_persons"
    assert r.loc["img_a", "reason"] == "too_few_persons"
    inter = rank_rich_scenes(frames, tags, persons, RichSceneRule(min_persons=2, min_tags=1, top_fraction=None))
    assert list(inter[inter.selected].frame_id) == ["c1_f000"]  # interaction scenes: >= 2 people
    top1 = rank_rich_scenes(frames, tags, persons, RichSceneRule(min_persons=1, top_n=1, top_fraction=None))
    assert list(top1[top1.selected].frame_id) == ["c1_f000"]
    assert top1.set_index("frame_id").loc["c1_f001", "reason"] == "below_cutoff"


def test_permissive_rule_gives_candidates_without_any_detection():
    r = rank_rich_scenes(
        _frames(),
        pd.DataFrame(columns=["frame_id", "tag"]),
        pd.Series(dtype="int64"),
        RichSceneRule(min_persons=0, min_tags=0, top_n=None, top_fraction=1.0),
    )
    assert r["selected"].all() and (r["n_persons"] == 0).all()
    strict = rank_rich_scenes(
        _frames(), pd.DataFrame(columns=["frame_id", "tag"]), pd.Series(dtype="int64"), RichSceneRule()
    )
    assert not strict["selected"].any()


def test_evidence_bundles_frames_and_clips():
    frames, det = _frames(), _dets()
    tags = tags_from_detections(det, "v")
    ind = pd.DataFrame(
        {
            "frame_id": ["c1_f000", "c1_f000", "c1_f001"],
            "label": ["person1", "person2", "person1"],
            "person_index": [1, 2, 1],
            "annotated_path": ["media/indicators/s-0000/c1_f000.jpg"] * 2 + ["media/indicators/s-0000/c1_f001.jpg"],
        }
    )
    ocr = pd.DataFrame({"frame_id": ["c1_f000", "c1_f001", "img_a"], "text": ["SALE 50%", "SALE 50%", ""]})
    clips = pd.DataFrame(
        {
            "clip_id": ["c1", "c2"],
            "transcript": ["well, that went great", None],
            "transcript_status": ["ok", "no_subtitles"],
        }
    )
    rich = rank_rich_scenes(
        frames, tags, count_persons(det), RichSceneRule(min_persons=1, min_tags=1, top_fraction=None)
    )
    ev = build_evidence(frames, tags, ind, ocr, clips, rich, "yolo").set_index(["unit", "unit_id"])
    f = ev.loc[("frame", "c1_f000")]
    assert f["persons"] == 2 and f["person_labels"] == ["person1", "person2"] and f["tags"][0] == "person"
    assert f["ocr_text"] == "SALE 50%" and f["transcript"] == "well, that went great" and f["rich_selected"]
    assert pd.isna(ev.loc[("frame", "c2_f000"), "ocr_text"])  # OCR did not run on it
    c1 = ev.loc[("clip", "c1")]
    assert c1["frame_ids"] == ["c1_f000", "c1_f001"] and c1["persons"] == 2 and c1["tags"][0] == "person"
    assert c1["ocr_text"] == "SALE 50%" and c1["annotated_paths"] == [
        "media/indicators/s-0000/c1_f000.jpg",
        "media/indicators/s-0000/c1_f001.jpg",
    ]
    c2 = ev.loc[("clip", "c2")]
    assert pd.isna(c2["transcript"]) and c2["transcript_status"] == "no_subtitles"
    img = ev.loc[("frame", "img_a")]
    assert img["transcript_status"] == "no_audio_image" and pd.isna(img["clip_id"])
    assert c1["transcript_source"] == "subtitles" and c2["transcript_source"] == "none"
    # the transcripts table (recognised speech) wins over the clips' subtitles
    said = pd.DataFrame(
        {
            "clip_id": ["c2"],
            "transcript": ["spoken aloud"],
            "transcript_status": ["ok"],
            "transcript_source": ["openai:whisper-1"],
        }
    )
    heard = build_evidence(frames, tags, ind, ocr, clips, rich, "yolo", transcripts=said).set_index(["unit", "unit_id"])
    assert heard.loc[("clip", "c2"), "transcript"] == "spoken aloud"
    assert heard.loc[("frame", "c2_f000"), "transcript_source"] == "openai:whisper-1"
    assert heard.loc[("clip", "c1"), "transcript_source"] == "subtitles"
    missing = build_evidence(frames, tags, ind, ocr, None, rich, "yolo").set_index(["unit", "unit_id"])
    assert missing.loc[("clip", "c1"), "transcript_status"] == "clips_table_missing"
    from forge.storage.contracts import load_contract

    c = load_contract("evidence")
    assert c.validate(c.conform(ev.reset_index())) == []
