"""Hummus's human step (§4: one expert linguist writes every annotation; docs/review.md "Protocol
steps"): the annotation itself, written on the expert's own: the LLM's draft is hidden
(``DraftMode.HIDDEN``; ``protocol: annotation: {draft: suggestion}`` pre-fills it, LLM-assisted
annotation), nothing of a gold shown.

The form: the verdict, the conceptual metaphors (one per line), the metaphor-related boxes drawn on
the image (their labels one per line, in drawing order), the metaphor spans marked on the caption
and the explanation. ``annotated`` puts a person's annotation in place of the LLM's for the items
stage, read with the same checks as imported human gold (``validate_annotation(human=True)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from forge.benchmarks.protocol_spec import Display, FieldKind, HumanStep, StepField
from forge.items.cells import as_list

from . import annotations as A
from .taxonomy import taxonomy, verdicts

ANNOTATION = "annotation"
REGION = "region"


def _data(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"image": row["path"], "caption": str(row["caption"])}


def _llm(row: Mapping[str, Any]) -> dict[str, Any]:
    """The LLM's annotation as the form's values (boxes in percent of the image, as Label Studio)."""
    boxes = [
        {
            "label": REGION,
            "x": float(r["box_norm_left"]) * 100,
            "y": float(r["box_norm_top"]) * 100,
            "width": float(r["box_norm_width"]) * 100,
            "height": float(r["box_norm_height"]) * 100,
        }
        for r in sorted(row.get("regions") or [], key=lambda r: r["region_index"])
    ]
    spans = [
        {"label": "metaphor", "start": int(a), "end": int(b), "text": str(t)}
        for a, b, t in zip(
            as_list(row.get("span_starts")), as_list(row.get("span_ends")), as_list(row.get("span_texts"))
        )
    ]
    labels = "\n".join(str(r["label"]) for r in sorted(row.get("regions") or [], key=lambda r: r["region_index"]))
    return {
        "verdict": row["verdict"],
        "incongruities": "\n".join(as_list(row.get("incongruities"))) or None,
        "resolution": row.get("resolution") or None,
        "metaphors": "\n".join(as_list(row.get("metaphors"))) or None,
        "boxes": boxes,
        "region_labels": labels or None,
        "spans": spans,
        # a Discard has no explanation: its reason is the suggestion, so the form is never blank
        "explanation": row.get("explanation") or _discarded(row),
        "devices": [d for d in as_list(row.get("devices")) if d in taxonomy()["devices"]],
    }


def _discarded(row: Mapping[str, Any]) -> str | None:
    reason = row.get("discard_reason")
    return f"Discard: {reason}" if row.get("verdict") == "Discard" and isinstance(reason, str) and reason else None


STEP = HumanStep(
    name=ANNOTATION,
    corrects="hummus_annotations",
    unit_key="annotation_id",
    fields=(
        StepField(
            "verdict",
            FieldKind.CHOICE,
            "Is a metaphor part of what makes it funny?",
            tuple((v, v) for v in verdicts()),
            to="image",
        ),
        # humor understanding first (§4.1): the incongruities and how the caption resolves them
        StepField(
            "incongruities", FieldKind.TEXT, "Incongruities in the image, one per line", required=False, to="caption"
        ),
        StepField("resolution", FieldKind.TEXT, "How the caption resolves them", required=False, to="caption"),
        StepField(
            "metaphors",
            FieldKind.TEXT,
            "Conceptual metaphors, one per line (TARGET IS SOURCE)",
            required=False,
            to="caption",
        ),
        StepField(
            "boxes",
            FieldKind.BOXES,
            "Draw the metaphor-related regions",
            ((REGION, REGION),),
            required=False,
            to="image",
        ),
        StepField(
            "region_labels",
            FieldKind.TEXT,
            "What each box shows, one per line in drawing order",
            required=False,
            to="caption",
        ),
        StepField(
            "spans",
            FieldKind.SPANS,
            "Mark the metaphor-related words of the caption",
            (("metaphor", "metaphor"),),
            required=False,
            to="caption",
        ),
        StepField("explanation", FieldKind.TEXT, "How the metaphor makes it funny", required=False, to="caption"),
        StepField(
            "devices",
            FieldKind.MULTI,
            "Other figurative devices (§4.2)",
            tuple((d, d) for d in taxonomy()["devices"]),
            required=False,
            to="image",
        ),
    ),
    display=(Display("image", "image"), Display("caption", "text", "Caption")),
    note="§4: one expert linguist writes every annotation (verdict, metaphors, boxes, caption spans, explanation); "
    "no gold is shown.",
    read_by=("hummus_items",),
)
STEPS = (STEP,)


def _prepare(anns: pd.DataFrame, read: Callable[[str], pd.DataFrame]) -> pd.DataFrame:
    """The form's rows: each annotation with its regions (what a join cannot say)."""
    return with_regions(anns, read("hummus_regions"))


# What the step's form shows, the LLM's answer and the form's rows (the paper's hooks dispatch on
# the step's name: hooks.py)
TASK_DATA = {ANNOTATION: _data}
LLM_VALUES = {ANNOTATION: _llm}
PREPARE = {ANNOTATION: _prepare}


def with_regions(anns: pd.DataFrame, regs: pd.DataFrame) -> pd.DataFrame:
    """Annotation rows with their region rows (``regions``): what the form's prediction is made of."""
    by = {k: g.to_dict("records") for k, g in regs.groupby("annotation_id")} if len(regs) else {}
    out = anns.copy()
    out["regions"] = [by.get(a, []) for a in out["annotation_id"]]
    return out


def _highlighted(caption: str, spans: list[dict[str, Any]]) -> str:
    out, at = [], 0
    for s in sorted(spans, key=lambda s: s["start"]):
        out += [caption[at : s["start"]], "<i>", caption[s["start"] : s["end"]], "</i>"]
        at = s["end"]
    return "".join(out + [caption[at:]])


def human_annotation(row: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The annotation row and region rows of a person's annotation of ``row``'s pair."""
    labels = [x.strip() for x in str(values.get("region_labels") or "").splitlines() if x.strip()]
    boxes = values.get("boxes") or []
    data = {
        "verdict": values["verdict"],
        "metaphors": [m.strip() for m in str(values.get("metaphors") or "").splitlines() if m.strip()],
        "regions": [
            {
                "label": labels[i] if i < len(labels) else REGION,
                "box": [b["y"] / 100, b["x"] / 100, b["height"] / 100, b["width"] / 100],
            }
            for i, b in enumerate(boxes)
        ],
        "caption_highlighted": _highlighted(str(row["caption"]), values.get("spans") or [])
        if values.get("spans")
        else "",
        "explanation": values.get("explanation") or "",
        # the person's own humor understanding and devices, never the LLM's (the form hid them)
        "devices": list(values.get("devices") or []),
        "incongruities": [x.strip() for x in str(values.get("incongruities") or "").splitlines() if x.strip()],
        "resolution": str(values.get("resolution") or "").strip(),
    }
    ann, _ = A.validate_annotation(data, str(row["caption"]), int(row["width"]), int(row["height"]), human=True)
    out = {
        **row,
        "verdict": ann.verdict,
        "metaphors": ann.metaphors,
        "incongruities": ann.incongruities,
        "resolution": ann.resolution or None,
        "devices": ann.devices,
        **A.text_fields(ann),
        "n_regions": len(ann.regions),
        "detail_reject": None,
        "detail_problems": [],
    }
    out.pop("regions", None)
    regions = A.region_rows(
        row["annotation_id"], row["frame_id"], row["batch"], ann.regions, row["width"], row["height"]
    )
    return out, regions


def annotated(
    anns: pd.DataFrame, regs: pd.DataFrame, decided: Mapping[str, Mapping[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The annotations and regions the items stage reads: a person's annotation in place of the
    LLM's where one exists (its regions replace the LLM's), the LLM's otherwise."""
    human = {u: d for u, d in decided.items() if d["decided_by"] == "human"}
    if anns.empty or not human:
        return anns, regs
    rows, new_regs = [], []
    for r in anns.to_dict("records"):
        d = human.get(r["annotation_id"])
        if d is None:
            rows.append(r)
            continue
        row, rg = human_annotation(r, d["values"])
        rows.append(row)
        new_regs += rg
    keep = regs[~regs["annotation_id"].isin(human)] if len(regs) else regs
    regions = pd.concat([keep, pd.DataFrame(new_regs, columns=regs.columns)], ignore_index=True) if new_regs else keep
    return pd.DataFrame(rows, columns=anns.columns), regions
