"""What a reviewer's Hummus verdict does to the pair, as the recipe would build it (§4), Dagster-free.

* An edited Classification answer is the pair's verdict: ``follow_edit`` sets ``labels.verdict``,
  the category and the reference on the edited item, exactly as ``logic/items.py`` builds a pair of
  that verdict (a No pair has no metaphors and no boxes), so the item ``hummus_items`` rebuilds from
  the kept verdict is the revision the reviewer made;
* ``recipe_drops``: a pair whose Classification says No keeps no detail items (§4.2 annotates
  details of Yes / WIDLII pairs only); the gate drops them at once, ``hummus_items`` no longer
  builds them once the annotation keeps the verdict;
* ``kept_verdicts``: the verdicts people decided (Classification accepted, as is or edited), which
  ``hummus_annotations`` keeps when it writes the pair again (a flipped reply gets feedback, never
  ``verdict_changed``, and never drops the pair).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from forge.items.cells import as_object

from .items import DETAIL_TASKS, POSITIVE

CLASSIFICATION = "classification"
ANSWER_VERDICT = {"A": "Yes", "B": "No"}  # the Classification options, fixed order (spec: OptionPolicy.FIXED)
VERDICT_EDITED = "verdict_edited"
VERDICT_KEPT = "verdict_kept"  # detail_reject of a kept positive verdict whose reply had no details


def _labels(item: dict[str, Any]) -> dict[str, Any]:
    return as_object(item.get("labels"))


def follow_edit(original: dict[str, Any], edited: dict[str, Any]) -> dict[str, Any]:
    """The edited Classification item with the fields that follow its answer (other items as they are)."""
    if edited.get("task") != CLASSIFICATION:
        return edited
    verdict = ANSWER_VERDICT.get(str(edited.get("answer") or "").strip().upper())
    labels = _labels(original)
    if verdict is None or (verdict in POSITIVE) == (labels.get("verdict") in POSITIVE):
        return edited  # the class did not change (a WIDLII pair answered Yes stays WIDLII)
    labels["verdict"] = verdict
    if verdict not in POSITIVE:
        labels.update(metaphors=[], boxes=[])
    return {**edited, "labels": json.dumps(labels), "category": verdict, "references": [verdict]}


def recipe_drops(items: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Detail items of a pair whose Classification verdict is now negative -> (why, that item)."""
    if items.empty or "task" not in items:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for _, pair in items.groupby(items["unit_id"].astype(str)):
        rows = pair.to_dict("records")
        cls = [r for r in rows if r.get("task") == CLASSIFICATION]
        if not cls:
            continue
        verdict = _labels(cls[0]).get("verdict")
        if verdict in POSITIVE:
            continue
        why = f"{VERDICT_EDITED}: the pair's verdict is {verdict} (its Classification was edited); a {verdict} pair has no detail items"
        for r in rows:
            if r.get("task") in DETAIL_TASKS:
                out[str(r["item_id"])] = (why, str(cls[0]["item_id"]))
    return out


def kept_verdicts(reviewed: pd.DataFrame) -> dict[str, str]:
    """frame -> the verdict people decided: its Classification item accepted at its current revision
    (as generated or as edited), from the review's resolution (``forge/review/regenerate.reviewed``)."""
    if reviewed.empty or "review_status" not in reviewed:
        return {}
    done = reviewed[(reviewed["task"] == CLASSIFICATION) & (reviewed["review_status"] == "accepted")]
    out = {}
    for r in done.to_dict("records"):
        verdict = _labels(r).get("verdict")
        if verdict:
            out[str(r["unit_id"])] = str(verdict)
    return out


def kept_verdict_problem(kept: str, reply: str) -> str | None:
    """Why a reply may not stand for a pair whose verdict people decided (None: it may). A No pair
    takes any reply (its details are dropped); a Yes / WIDLII pair needs a positive reply's details."""
    if kept not in POSITIVE or str(reply).strip().lower() in {v.lower() for v in POSITIVE}:
        return None
    return (
        f"A reviewer decided this pair's verdict is {kept}: keep that verdict and annotate its metaphor, "
        "the related objects' boxes, the caption span and the explanation"
    )


def with_kept(reply: dict[str, Any], kept: str | None) -> dict[str, Any]:
    """A reply to check as the annotation of a pair people said No to: that verdict, whose details
    are not checked (keep_verdicts drops them); any other reply as it is."""
    return {**reply, "verdict": kept} if kept is not None and kept not in POSITIVE else reply


def keep_verdicts(
    rows: list[dict[str, Any]], regions: list[dict[str, Any]], kept: dict[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Annotation rows (and their regions) with people's verdicts kept: a negative one clears the
    details (and the regions), a positive one over a negative reply keeps the verdict alone
    (``detail_reject = verdict_kept``: Classification only, per ``items.on_detail_failure``)."""
    out, drop = [], set()
    for row in rows:
        k = kept.get(str(row["frame_id"]))
        if k is None or k == row["verdict"]:
            out.append(row)
            continue
        note = f"verdict {k} kept from review (the reply said {row['verdict']})"
        new = {**row, "verdict": k, "repairs": [*(row.get("repairs") or []), note]}
        if k not in POSITIVE:
            new.update(metaphors=[], caption_highlighted=None, span_texts=[], span_starts=[], span_ends=[])
            new.update(explanation=None, explanation_words=0, n_regions=0, detail_reject=None, detail_problems=[])
            drop.add(row["annotation_id"])
        elif row["verdict"] not in POSITIVE:
            new.update(detail_reject=VERDICT_KEPT, detail_problems=[f"{VERDICT_KEPT}: the reply had no details"])
        out.append(new)
    return out, [r for r in regions if r["annotation_id"] not in drop]
