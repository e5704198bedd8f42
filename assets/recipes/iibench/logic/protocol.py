"""II-Bench's human steps (§3.2; docs/review.md "Protocol steps"): people inspect every image before
annotation (Stage 3: keep only images with an implication), then label it (App. B.2: image type,
domain, emotion, rhetoric, difficulty). As the paper's people, they answer on their own: the LLM's
verdict, explanation and labels are hidden (``DraftMode.HIDDEN``) unless the recipe opts in.

The stages read the results through ``kept_images`` and ``labelled``: an image people dropped never
reaches labels or questions, and people's labels replace the LLM's in the items.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from forge.benchmarks.protocol_spec import Display, FieldKind, HumanStep, StepField

from . import taxonomy as tax

INSPECTION = "inspection"
LABELS = "labels"
_SHORT = {
    "image_type": "Image type",
    "domain": "Domain",
    "emotion": "Emotion",
    "rhetoric": "Rhetoric",
    "difficulty": "Difficulty",
}


def _inspection_data(row: Mapping[str, Any]) -> dict[str, Any]:
    why = row.get("implication") or row.get("reason") or "(the judge gave no reason)"
    return {"image": row["path"], "judge": f"LLM judge: {'keep' if row['keep'] else 'drop'}: {why}"}


def _inspection_llm(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"inspection": "keep" if bool(row["keep"]) else "drop"}


def _axis_field(axis: str) -> StepField:
    official = tax.taxonomy()[axis]["official"]
    kind = FieldKind.MULTI if axis in tax.MULTI_AXES else FieldKind.CHOICE
    return StepField(axis, kind, _SHORT[axis], tuple((v, official[v]) for v in tax.values(axis)), to="image")


def _labels_data(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"image": row["path"], "explanation": str(row.get("explanation") or "")}


def _labels_llm(row: Mapping[str, Any]) -> dict[str, Any]:
    return {a: (list(row[a]) if a in tax.MULTI_AXES else row[a]) for a in tax.AXES}


STEPS = (
    HumanStep(
        name=INSPECTION,
        corrects="iibench_implication",
        unit_key="frame_id",
        fields=(
            StepField(
                "inspection",
                FieldKind.CHOICE,
                "Does the image carry an implication (metaphorical or suggestive meaning)?",
                (("keep", "Keep: it has an implication"), ("drop", "Drop: no implication")),
                to="image",
            ),
        ),
        # the judge's verdict is the draft: hidden by default (§3.2: people inspected the images themselves)
        display=(Display("image", "image"), Display("judge", "text", "The LLM judge's verdict", draft=True)),
        keep_choice=("inspection", ("keep",)),
        note="§3.2 Stage 3: every image is inspected by a person before annotation; only images with an "
        "implication are kept.",
        read_by=("iibench_labels", "iibench_items"),
    ),
    HumanStep(
        name=LABELS,
        corrects="iibench_labels",
        unit_key="frame_id",
        fields=tuple(_axis_field(a) for a in tax.AXES),
        display=(
            Display("image", "image"),
            Display("explanation", "text", "The implication (LLM explanation)", draft=True),
        ),
        note="App. B.2: each image's type, domain, emotion, rhetoric (one or more) and difficulty, in the "
        "official release's spelling.",
        read_by=("iibench_items",),
    ),
)
# What each step's form shows and the LLM's answer (the paper's hooks dispatch on the step's name: hooks.py)
TASK_DATA = {INSPECTION: _inspection_data, LABELS: _labels_data}
LLM_VALUES = {INSPECTION: _inspection_llm, LABELS: _labels_llm}


def kept_images(implication: pd.DataFrame, inspection: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, dict]:
    """The images the labels stage annotates: people's keep / drop where they inspected the image,
    the LLM judge's otherwise. Returns (kept rows, counts)."""
    if implication.empty:
        return implication, {"dropped_by_people": 0, "kept_by_people": 0}
    df = implication.copy()
    human = {u: d for u, d in inspection.items() if d["decided_by"] == "human"}
    llm_keep = df["keep"].astype(bool)
    df["keep"] = [human[f]["keep"] if f in human else k for f, k in zip(df["frame_id"], llm_keep)]
    counts = {
        "dropped_by_people": int(sum(f in human and not human[f]["keep"] for f in df["frame_id"])),
        "kept_by_people": int(sum(f in human and human[f]["keep"] for f in df["frame_id"])),
    }
    return df[df["keep"]], counts


def labelled(labels: pd.DataFrame, decided: Mapping[str, Mapping[str, Any]], inspection: Mapping) -> pd.DataFrame:
    """The labels the questions stage reads: people's where they labelled the image, the LLM's
    otherwise; an image people dropped at inspection after it was labelled is left out."""
    if labels.empty:
        return labels
    df = labels[~labels["frame_id"].map(lambda f: f in inspection and not inspection[f]["keep"])].copy()
    for i, f in zip(df.index, df["frame_id"]):
        d = decided.get(f)
        if d is not None and d["decided_by"] == "human":
            for a in tax.AXES:
                df.at[i, a] = list(d["values"][a]) if a in tax.MULTI_AXES else d["values"][a]
    return df
