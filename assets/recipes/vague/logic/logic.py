"""VAGUE (Nam et al.) recipe logic: candidates, checks on generations, options and items.

Pure functions over DataFrames and parsed LLM replies; the assets in
``assets/recipes/vague`` call them around the LLM engine. Sections of the paper:
§4.1 candidate frames, §4.2.1 direct expression + solution triple, §4.2.2 indirect
expressions (+ the ambiguity criterion of §3.2.2 checked in code), §4.2.3 counterfactual
options FS / SU / NE, §3.1 the 4-option MCQ.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from forge.checks import mcq
from forge.checks.language import texts_of, wrong_language
from forge.provenance.versioning import content_hash

from . import lexicon
from . import objects as O

QUESTION = "Select the option that best explains the underlying intention of the utterance based on the given image."
STRATEGIES = ("sarcasm", "humour", "meme_idiom")
OPTION_TYPES = ("correct", "FS", "SU", "NE")
LANGUAGE = "en"  # VAGUE's expressions and options are English (§4.2)
NO_LABEL_SUBJECT = "someone"  # addressee when the frame has no person indicator (demo relaxation)


# --------------------------------------------------------------------------- candidates (§4.1)


def _labels_by_frame(indicators: pd.DataFrame) -> dict[str, tuple[list[str], str | None]]:
    out: dict[str, tuple[list[str], str | None]] = {}
    if indicators is None or indicators.empty:
        return out
    for fid, g in indicators.sort_values(["frame_id", "person_index"]).groupby("frame_id", sort=False):
        paths = [p for p in g["annotated_path"].tolist() if p]
        out[str(fid)] = (g["label"].astype(str).tolist(), paths[0] if paths else None)
    return out


def _tags_by_frame(tags: pd.DataFrame) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if tags is None or tags.empty:
        return out
    t = tags.assign(score=tags["score"].fillna(0.0)).sort_values(["frame_id", "score"], ascending=[True, False])
    for fid, g in t.groupby("frame_id", sort=False):
        seen: list[str] = []
        for tag in g["tag"].astype(str):
            tag = tag.strip().lower()
            if tag and tag not in seen:
                seen.append(tag)
        out[str(fid)] = seen
    return out


def _tagger_by_frame(tags: pd.DataFrame) -> dict[str, str]:
    """The tagger backend behind each frame's tags: ``ram`` (open tags) or ``yolo`` (the
    detector's class names, the fallback when no RAM checkpoint is configured)."""
    if tags is None or tags.empty or "backend" not in tags:
        return {}
    return {str(f): ",".join(sorted({str(b) for b in g["backend"].dropna()})) for f, g in tags.groupby("frame_id")}


def _detected_by_frame(detections: pd.DataFrame) -> dict[str, list[str]]:
    if detections is None or detections.empty:
        return {}
    return {str(f): sorted({str(c).lower() for c in g["class_name"]}) for f, g in detections.groupby("frame_id")}


def caption_objects(caption: str | None) -> list[str]:
    """Content words of a caption, in order, deduplicated (the ``caption`` vocabulary fallback)."""
    out: list[str] = []
    if not isinstance(caption, str):  # None or NaN from a frame without a caption
        return out
    for w in lexicon.content_words(caption):
        if len(w) > 2 and w not in out:
            out.append(w)
    return out


def select_candidates(
    frames: pd.DataFrame,
    scenes: pd.DataFrame,
    indicators: pd.DataFrame,
    tags: pd.DataFrame,
    detections: pd.DataFrame,
    *,
    kinds: Sequence[str] = ("pool_frame", "image"),
    min_persons: int = 2,
    min_tags: int = 1,
    min_blur_var: float = 0.0,
    min_gap_s: float = 2.0,
    max_per_batch: int | None = None,
    object_vocabulary: str = "tags",
    object_filter: str | O.ObjectFilter = "physical_objects",
) -> tuple[pd.DataFrame, list[dict[str, str]]]:
    """Candidate frames of one batch and the rejects (``{frame_id, reason, detail, related_id}``).

    Only ``selected`` rich scenes are considered, richest in physical objects first (``object_filter``,
    §4.1.2: the official pipeline ranks images by their physical-object tags; every tagger
    backend's tags go through it, and people are never objects). A frame is dropped when
    it is not of an allowed kind, blurry, has too few persons or tags, lies within
    ``min_gap_s`` of a better-ranked kept frame of the same video (no neighbouring frames),
    has no object vocabulary, or falls beyond ``max_per_batch``.
    """
    rejects: list[dict[str, str]] = []
    cols = [
        "frame_id",
        "batch",
        "source",
        "item_id",
        "clip_id",
        "kind",
        "timestamp_s",
        "frame_path",
        "image_path",
        "image_kind",
        "image_note",
        "person_labels",
        "objects",
        "object_source",
        "tagger_backend",
        "present_objects",
        "n_tags",
        "n_persons",
        "rank",
        "caption",
    ]
    if scenes is None or scenes.empty:
        return pd.DataFrame(columns=cols), rejects
    sel = scenes[scenes["selected"].astype(bool)]
    fr = frames.set_index("frame_id")
    labels = _labels_by_frame(indicators)
    all_tags = _tags_by_frame(tags)
    keep = object_filter if isinstance(object_filter, O.ObjectFilter) else O.object_filter(object_filter)
    tag_map = {f: keep.keep(t) for f, t in all_tags.items()}
    n_obj = sel["frame_id"].astype(str).map(lambda f: len(tag_map.get(f, [])))
    sel = sel.assign(n_objects=n_obj).sort_values(
        ["n_objects", "n_persons", "rank", "frame_id"], ascending=[False, False, True, True]
    )
    tagger_map = _tagger_by_frame(tags)
    det_map = _detected_by_frame(detections)
    kept_times: dict[str, list[float]] = {}
    rows: list[dict[str, Any]] = []

    def reject(fid: str, reason: str, detail: str = "", related: str | None = None) -> None:
        rejects.append({"frame_id": fid, "reason": reason, "detail": detail, "related_id": related})

    for s in sel.itertuples(index=False):
        fid = str(s.frame_id)
        if fid not in fr.index:
            reject(fid, "frame_missing", "rich scene without a frames row")
            continue
        f = fr.loc[fid]
        if f["kind"] not in kinds:
            reject(fid, "frame_kind", f"kind {f['kind']} not in {list(kinds)} (neighbouring clip frames are excluded)")
            continue
        blur = f.get("blur_var")
        if blur is not None and not pd.isna(blur) and float(blur) < min_blur_var:
            reject(fid, "blurry", f"blur_var {float(blur):.1f} < {min_blur_var}")
            continue
        person_labels, annotated = labels.get(fid, ([], None))
        n_persons = max(int(s.n_persons), len(person_labels))
        if n_persons < min_persons:
            reject(fid, "too_few_persons", f"{n_persons} < {min_persons}")
            continue
        frame_tags = tag_map.get(fid, [])
        if len(frame_tags) < min_tags:
            reject(
                fid, "too_few_tags", f"{len(frame_tags)} physical-object tags < {min_tags} (of {all_tags.get(fid, [])})"
            )
            continue
        if frame_tags:
            objects, source = frame_tags, "tags"
        elif object_vocabulary == "tags_or_caption" and caption_objects(f.get("caption")):
            objects, source = caption_objects(f.get("caption")), "caption"
        else:
            reject(
                fid,
                "no_object_vocabulary",
                "frame has no physical-object tags" + ("" if object_vocabulary == "tags" else " and no caption words"),
            )
            continue
        item = str(f["item_id"])
        ts = f.get("timestamp_s")
        if ts is not None and not pd.isna(ts) and f["kind"] != "image":
            near = [t for t in kept_times.get(item, []) if abs(t - float(ts)) < min_gap_s]
            if near:
                reject(
                    fid,
                    "neighbouring_frame",
                    f"{float(ts):.2f}s is within {min_gap_s}s of a kept frame at {near[0]:.2f}s of the same video",
                )
                continue
        if max_per_batch is not None and len(rows) >= max_per_batch:
            reject(fid, "batch_cap", f"batch already has {max_per_batch} candidates")
            continue
        if ts is not None and not pd.isna(ts):
            kept_times.setdefault(item, []).append(float(ts))
        present = sorted(set(all_tags.get(fid, [])) | set(det_map.get(fid, [])))
        rows.append(
            {
                "frame_id": fid,
                "batch": str(s.batch),
                "source": str(f["source"]),
                "item_id": item,
                "clip_id": None if pd.isna(f.get("clip_id")) else str(f.get("clip_id")),
                "kind": str(f["kind"]),
                "timestamp_s": None if ts is None or pd.isna(ts) else float(ts),
                "frame_path": str(f["path"]),
                "image_path": annotated or str(f["path"]),
                "image_kind": "indicators" if annotated else "plain",
                "image_note": None
                if annotated
                else "no person indicator image for this frame (no persons detected); the plain frame is shown",
                "person_labels": person_labels,
                "objects": objects,
                "object_source": source,
                "tagger_backend": tagger_map.get(fid),
                "present_objects": present,
                "n_tags": len(frame_tags),
                "n_persons": n_persons,
                "rank": int(s.rank),
                "caption": None if pd.isna(f.get("caption")) else f.get("caption"),
            }
        )
    return pd.DataFrame(rows, columns=cols), rejects


# --------------------------------------------------------------------------- prompts with per-frame enums


def specialise(prompt: Any, enums: dict[str, list[Any]]) -> Any:
    """``prompt`` whose reply schema restricts some properties to this frame's values.

    E.g. ``subject`` ∈ the frame's person labels and ``object`` ∈ its tags: structured
    output (and the engine's validation + one repair turn) then enforce what the paper asks
    of the triple. The hash gets a suffix (``<file hash>.<enum hash>``) because the engine
    keys compiled validators by prompt hash; rows keep the file hash.
    """
    schema = copy.deepcopy(prompt.schema)
    for key, values in enums.items():
        schema["properties"][key]["enum"] = list(values)
    return dataclasses.replace(prompt, schema=schema, hash=f"{prompt.hash}.{content_hash(enums, length=8)}")


def match_object(obj: str, vocabulary: Sequence[str]) -> str | None:
    """The vocabulary entry ``obj`` names (exact, else same lemmas), or None."""
    o = str(obj or "").strip().lower()
    if not o:
        return None
    for v in vocabulary:
        if o == v.lower():
            return v
    key = lexicon.lemmas(o)
    for v in vocabulary:
        if lexicon.lemmas(v) == key:
            return v
    return None


def triple_problems(
    data: dict[str, Any], person_labels: Sequence[str], objects: Sequence[str]
) -> list[tuple[str, str]]:
    """Reasons a direct-expression reply breaks §4.2.1 (empty = valid). Text not in VAGUE's
    language (English) is ``wrong_language`` and nothing else: no other rule judges it."""
    found = wrong_language(texts_of(data, ["direct_expression", "intention"]), LANGUAGE)
    if found is not None:
        return [("wrong_language", f"the direct expression is in {found.language}, not {LANGUAGE}")]
    problems: list[tuple[str, str]] = []
    subjects = list(person_labels) or [NO_LABEL_SUBJECT]
    if str(data.get("subject", "")).strip().lower() not in {s.lower() for s in subjects}:
        problems.append(("subject_not_a_person_label", f"subject {data.get('subject')!r} not in {subjects}"))
    if match_object(str(data.get("object", "")), objects) is None:
        problems.append(
            (
                "object_not_in_tags",
                f"object {data.get('object')!r} is not one of the frame's extracted objects {list(objects)[:30]}",
            )
        )
    if not lexicon.content_lemmas(str(data.get("action", ""))):
        problems.append(("empty_action", f"action {data.get('action')!r} has no content word"))
    for key in ("direct_expression", "intention"):
        if not str(data.get(key, "")).strip():
            problems.append((f"empty_{key}", f"{key} is empty"))
    return problems


def reply_json(text: str | None) -> dict[str, Any] | None:
    """The JSON object in a raw reply (for diagnosing a schema-invalid reply), or None."""
    if not text:
        return None
    t = text.strip()
    if t.startswith("```"):
        t = t.strip("`").split("\n", 1)[-1]
    start, end = t.find("{"), t.rfind("}")
    try:
        value = json.loads(t[start : end + 1]) if start >= 0 else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def rating_verdict(scores: dict[str, Any], minimums: dict[str, int]) -> list[str]:
    """Names of the scores below their minimum (empty = keep)."""
    return [f"{k}={scores.get(k)}<{m}" for k, m in minimums.items() if int(scores.get(k) or 0) < m]


# --------------------------------------------------------------------------- ambiguity (§3.2.2)


@dataclasses.dataclass
class AmbiguityReport:
    ok: bool
    reasons: list[str]
    lexical_action: list[str]
    lexical_object: list[str]
    object_similarity: float
    object_similar_word: str | None
    action_similarity: float
    action_similar_word: str | None
    direct_similarity: float | None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def ambiguity_check(
    expression: str,
    action: str,
    obj: str,
    direct: str | None = None,
    embedder: Any = None,
    *,
    word_threshold: float = 0.7,
    sentence_threshold: float = 0.85,
) -> AmbiguityReport:
    """Does the indirect ``expression`` conceal the action and the key object?

    Lexical: no content lemma of ``action`` or ``obj`` may occur in it. Embedding (when an
    ``embedder`` is given): no content word of it may have cosine ≥ ``word_threshold`` with
    the object or the action (synonyms: *mug* for *cup*, *telly* for *television*), and the
    whole expression must stay below ``sentence_threshold`` against the direct expression.
    """
    if wrong_language(expression, LANGUAGE) is not None:  # not English: no other rule judges it
        return AmbiguityReport(False, ["wrong_language"], [], [], 0.0, None, 0.0, None, None)
    reasons: list[str] = []
    lex_act = lexicon.mentions(expression, action)
    lex_obj = lexicon.mentions(expression, obj)
    if lex_act:
        reasons.append("names_action")
    if lex_obj:
        reasons.append("names_object")
    o_sim = a_sim = 0.0
    o_word = a_word = None
    d_sim = None
    if embedder is not None:
        words = lexicon.content_words(expression)
        targets = [t for t in (obj, action) if t and t.strip()]
        if words and targets:
            sims = embedder.similarity(words, [obj or "", action or ""])
            oi, ai = int(sims[:, 0].argmax()), int(sims[:, 1].argmax())
            o_sim, a_sim = float(sims[oi, 0]), float(sims[ai, 1])
            o_word, a_word = words[oi], words[ai]
            if o_sim >= word_threshold and not lex_obj:
                reasons.append("object_synonym")
            if a_sim >= word_threshold and not lex_act:
                reasons.append("action_synonym")
        if direct:
            d_sim = float(embedder.similarity([expression], [direct])[0, 0])
            if d_sim >= sentence_threshold:
                reasons.append("too_close_to_direct")
    return AmbiguityReport(
        not reasons,
        reasons,
        lex_act,
        lex_obj,
        round(o_sim, 4),
        o_word,
        round(a_sim, 4),
        a_word,
        None if d_sim is None else round(d_sim, 4),
    )


# --------------------------------------------------------------------------- nonexistent entity (§4.2.3)


def ne_problems(
    substitute: str,
    interpretation: str,
    original: str,
    present: Sequence[str],
    embedder: Any = None,
    similarity_threshold: float = 0.7,
) -> list[tuple[str, str]]:
    """Reasons an NE option is invalid: its object is (a synonym of) something in the frame,
    it equals the original object, or the option still names the original object."""
    problems: list[tuple[str, str]] = []
    sub = str(substitute or "").strip()
    if not lexicon.content_lemmas(sub):
        return [("ne_empty_object", f"substitute object {substitute!r} has no content word")]
    if set(lexicon.content_lemmas(sub)) & set(lexicon.content_lemmas(original)):
        problems.append(("ne_same_object", f"{sub!r} is the original object {original!r}"))
    hits = [p for p in present if set(lexicon.content_lemmas(p)) & set(lexicon.content_lemmas(sub))]
    if hits:
        problems.append(("ne_object_present", f"{sub!r} is in the frame's tags/detections: {hits}"))
    elif embedder is not None and present:
        sims = embedder.similarity([sub], list(present))[0]
        j = int(sims.argmax())
        if float(sims[j]) >= similarity_threshold:
            problems.append(
                (
                    "ne_object_present",
                    f"{sub!r} is a near-synonym (cos {float(sims[j]):.2f}) of {present[j]!r}, which is in the frame",
                )
            )
    if lexicon.mentions(interpretation, original):
        problems.append(("ne_mentions_original", f"the NE option still names the original object {original!r}"))
    return problems


# --------------------------------------------------------------------------- items (§3.1)


def long_options(texts: dict[str, str], max_words: int) -> list[str]:
    """``type (n words)`` of each option longer than ``max_words`` (the official generation prompts
    cap every option at 15 words)."""
    out = []
    for typ, text in texts.items():
        n = len(lexicon.tokens(str(text or "")))
        if n > max_words:
            out.append(f"{typ} ({n} words)")
    return out


def _plain(value: Any) -> Any:
    """numpy scalars / arrays (as read back from Parquet) → JSON-able Python values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def item_id(frame_id: str) -> str:
    return "vague-" + content_hash("vague", frame_id, length=16)


def _tagger_label(backend: Any) -> str | None:
    """How items name the tagger: RAM's open tags, or YOLO's classes as the labelled fallback."""
    if not isinstance(backend, str) or not backend:
        return None
    return {"ram": "ram", "yolo": "yolo_classes_fallback"}.get(backend, backend)


def build_item(
    cand: dict[str, Any],
    direct: dict[str, Any],
    indirect: dict[str, Any],
    options: dict[str, dict[str, Any]],
    correct_position: int | None,
    seed: str,
    channel: str | None = None,
) -> dict[str, Any]:
    """One ``vague_items`` row: a 4-option MCQ (correct, FS, SU, NE) with a seeded order."""
    iid = item_id(cand["frame_id"])
    texts = [options[t]["text"] for t in OPTION_TYPES]
    shuffled = mcq.shuffle_options(texts, list(OPTION_TYPES), seed=(seed, iid), correct_position=correct_position)
    hashes = sorted(
        {
            h
            for h in [
                direct.get("prompt_hash"),
                direct.get("judge_prompt_hash"),
                indirect.get("prompt_hash"),
                indirect.get("select_prompt_hash"),
            ]
            + [o.get("prompt_hash") for o in options.values()]
            if h
        }
    )
    backends = {direct.get("backend"), indirect.get("backend")} | {o.get("backend") for o in options.values()}
    backends.discard(None)
    return {
        "item_id": iid,
        "benchmark": "vague",
        "task": "mcq",
        "category": indirect["strategy"],
        "question": f'{QUESTION}\nUtterance: "{indirect["indirect_expression"]}"',
        "options": shuffled.options,
        "option_types": shuffled.option_types,
        "answer": shuffled.answer,
        "references": [direct["intention"]],
        "media_paths": [cand["image_path"]],
        "unit_id": cand["frame_id"],
        "source_item_id": cand["item_id"],
        "source": cand["source"],
        "channel": channel,
        "batch": cand["batch"],
        "labels": json.dumps(
            {
                "strategy": indirect["strategy"],
                "subject": direct["subject"],
                "action": direct["action"],
                "object": direct["object"],
                "object_source": cand.get("object_source"),
                "tagger_backend": _tagger_label(cand.get("tagger_backend")),
                "image_kind": cand.get("image_kind"),
            },
            default=_plain,
        ),
        "backend": "stub"
        if "stub" in backends
        else (backends.pop() if len(backends) == 1 else ",".join(sorted(backends))),
        "model": direct.get("model"),
        "prompt_hash": content_hash(hashes, length=16),
        "direct_expression": direct["direct_expression"],
        "indirect_expression": indirect["indirect_expression"],
        "extra": json.dumps(
            {
                "ratings": {
                    "relevance": direct.get("relevance"),
                    "solvability": direct.get("solvability"),
                    "indirect": indirect.get("rating"),
                },
                "fake_caption": options["FS"].get("fake_caption"),
                "substitute_object": options["NE"].get("substitute_object"),
                "prompt_hashes": hashes,
                "frame_path": cand.get("frame_path"),
            },
            default=_plain,
        ),
    }
