"""A protocol step's Label Studio form: its labeling config, the LLM's answer as a prediction's
result, and a person's annotation read back as field → value, or refused with the reason.

One declaration (``HumanStep.fields``) makes all three, so the form, the prediction and the
reader never disagree on a control's name, type or options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from xml.sax.saxutils import quoteattr

from forge.benchmarks.protocol_spec import FieldKind, HumanStep, StepField
from forge.checks import text_rules

# Label Studio's result ``type`` of each kind, and the value key holding the answer.
LS_TYPE = {
    FieldKind.CHOICE: ("choices", "choices"),
    FieldKind.MULTI: ("choices", "choices"),
    FieldKind.RATING: ("rating", "rating"),
    FieldKind.TEXT: ("textarea", "text"),
    FieldKind.BOXES: ("rectanglelabels", "rectanglelabels"),
    FieldKind.SPANS: ("labels", "labels"),
}


class Refused(ValueError):
    """A person's answer the step cannot take: ``code`` names why (for people: ``str(exc)``)."""

    def __init__(self, code: str, field: str, detail: str):
        super().__init__(f"{field}: {code}: {detail}")
        self.code = code


def _target(step: HumanStep, f: StepField) -> str:
    return f.to or step.display[0].name


def label_config(step: HumanStep, with_draft: bool | None = None) -> str:
    """The step's labeling config (XML): what it shows, then one control per field. Displays of the
    LLM's draft (``Display.draft``) are in it only where the draft is shown (``with_draft``; by
    default as the step's ``DraftMode`` says of its first pass)."""
    show = step.draft.shows_draft if with_draft is None else with_draft
    out = ["<View>"]
    if step.instruction:
        out.append(f"  <Header value={quoteattr(step.instruction)}/>")
    for d in step.displays(show):
        if d.title:
            out.append(f"  <Header value={quoteattr(d.title)}/>")
        if d.kind == "images":  # a gallery of the clip's frames
            out.append(f'  <Image name="{d.name}" valueList="${d.name}"/>')
            continue
        if d.kind == "video":  # the clip itself, played in the form (as the review form's <Video>)
            out.append(f'  <Video name="{d.name}" value="${d.name}"/>')
            continue
        tag = "Image" if d.kind == "image" else "Text"
        out.append(f'  <{tag} name="{d.name}" value="${d.name}"/>')
    for f in step.fields:
        out.append(f"  <Header value={quoteattr(f.title or f.name)}/>")
        out.append("  " + _control(step, f))
    out.append("</View>")
    return "\n".join(out)


def _options(f: StepField, tag: str) -> str:
    # alias: the stored value; value: what the person reads (a paper's official spelling)
    return "".join(f"<{tag} value={quoteattr(shown)} alias={quoteattr(value)}/>" for value, shown in f.options)


def _control(step: HumanStep, f: StepField) -> str:
    to, req = _target(step, f), "true" if f.required else "false"
    head = f'name="{f.name}" toName="{to}"'
    if f.kind in (FieldKind.CHOICE, FieldKind.MULTI):
        multi = "multiple" if f.kind is FieldKind.MULTI else "single"
        return f'<Choices {head} choice="{multi}" required="{req}" showInline="true">{_options(f, "Choice")}</Choices>'
    if f.kind is FieldKind.RATING:
        return f'<Rating {head} maxRating="{f.scale}" required="{req}"/>'
    if f.kind is FieldKind.TEXT:
        return f'<TextArea {head} editable="true" maxSubmissions="1" required="{req}" rows="3"/>'
    if f.kind is FieldKind.BOXES:
        return f"<RectangleLabels {head}>{_options(f, 'Label')}</RectangleLabels>"
    return f"<Labels {head}>{_options(f, 'Label')}</Labels>"


# -- the LLM's answer as a prediction --------------------------------------------------------------


def prediction(step: HumanStep, values: Mapping[str, Any], model_version: str) -> dict[str, Any]:
    """A Label Studio prediction (pre-annotation) of the LLM's ``values``: people see it as a
    suggestion and submit their own annotation. Fields without a value are left out."""
    result: list[dict[str, Any]] = []
    for f in step.fields:
        v = values.get(f.name)
        if v is None or v == "" or v == []:
            continue
        result += _result(step, f, v)
    return {"model_version": model_version, "result": result}


def _result(step: HumanStep, f: StepField, v: Any) -> list[dict[str, Any]]:
    ls_type, key = LS_TYPE[f.kind]
    base = {"from_name": f.name, "to_name": _target(step, f), "type": ls_type}
    if f.kind is FieldKind.CHOICE:
        return [{**base, "value": {key: [str(v)]}}]
    if f.kind is FieldKind.MULTI:
        return [{**base, "value": {key: [str(x) for x in v]}}]
    if f.kind is FieldKind.RATING:
        return [{**base, "value": {key: int(v)}}]
    if f.kind is FieldKind.TEXT:
        return [{**base, "value": {key: [str(v)]}}]
    if f.kind is FieldKind.BOXES:  # [{label, x, y, width, height}] in percent of the image
        return [
            {
                **base,
                "id": f"{f.name}{i}",
                "value": {k: b[k] for k in ("x", "y", "width", "height")} | {key: [b["label"]]},
            }
            for i, b in enumerate(v)
        ]
    # spans: [{label, start, end, text}]
    return [
        {
            **base,
            "id": f"{f.name}{i}",
            "value": {"start": s["start"], "end": s["end"], "text": s["text"], key: [s["label"]]},
        }
        for i, s in enumerate(v)
    ]


# -- a person's annotation read back -----------------------------------------------------------------


def read(step: HumanStep, result: Any) -> dict[str, Any]:
    """field → value of one annotation's ``result``; raises ``Refused`` on anything the step cannot
    take exactly (an unknown control, a rating outside the scale, an empty or missing answer)."""
    if not isinstance(result, list):
        raise Refused("empty_answer", "result", "the annotation has no result")
    names = {f.name: f for f in step.fields}
    by: dict[str, list[dict[str, Any]]] = {}
    for r in result:
        name = r.get("from_name") if isinstance(r, dict) else None
        if name not in names:
            raise Refused("unknown_control", str(name), f"the form has no control {name!r}")
        to = r.get("to_name")
        if to != _target(step, names[name]):  # an answer about another object is read as nothing
            raise Refused("unknown_target", name, f"names {to!r}; the control is about {_target(step, names[name])!r}")
        by.setdefault(name, []).append(r)
    return {f.name: _value(f, by.get(f.name, [])) for f in step.fields}


def _value(f: StepField, rs: list[dict[str, Any]]) -> Any:
    ls_type, key = LS_TYPE[f.kind]
    for r in rs:
        if r.get("type") != ls_type:
            raise Refused("unknown_control", f.name, f"expected a {ls_type} result, got {r.get('type')!r}")
    if f.kind in (FieldKind.BOXES, FieldKind.SPANS):
        return [_region(f, r["value"]) for r in rs]
    vals = [r.get("value", {}).get(key) for r in rs]
    if not rs or all(v in (None, "", [], [""]) for v in vals):
        if f.required:
            raise Refused("empty_answer", f.name, "no answer given")
        return None
    if f.kind is FieldKind.RATING:
        return _rating(f, vals)
    if f.kind is FieldKind.TEXT:
        text = " ".join(" ".join(str(t) for t in (v if isinstance(v, list) else [v])) for v in vals).strip()
        if not text:
            if f.required:
                raise Refused("empty_answer", f.name, "the text is empty")
            return None
        return _readable(f.name, text)
    chosen = [str(c) for v in vals for c in (v if isinstance(v, list) else [v])]
    allowed = {o for o, _ in f.options}
    bad = [c for c in chosen if c not in allowed]
    if bad:
        raise Refused("unknown_choice", f.name, f"{bad[0]!r} is not one of {sorted(allowed)}")
    if f.kind is FieldKind.CHOICE:
        if len(set(chosen)) != 1:
            raise Refused("several_choices", f.name, f"one choice expected, got {chosen}")
        return chosen[0]
    return sorted(set(chosen), key=[o for o, _ in f.options].index)


def _rating(f: StepField, vals: list[Any]) -> int:
    if len(vals) != 1:
        raise Refused("several_choices", f.name, f"one rating expected, got {vals}")
    v = vals[0]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or not 1 <= int(v) <= f.scale:
        raise Refused("rating_out_of_range", f.name, f"{v!r} is not a whole number from 1 to {f.scale}")
    return int(v)


def _region(f: StepField, v: dict[str, Any]) -> dict[str, Any]:
    ls_type, key = LS_TYPE[f.kind]
    labels = v.get(key) or []
    allowed = {o for o, _ in f.options}
    if len(labels) != 1 or labels[0] not in allowed:
        raise Refused("unknown_choice", f.name, f"a region needs one label of {sorted(allowed)}, got {labels}")
    if f.kind is FieldKind.BOXES:
        box = {k: round(float(v[k]), 4) for k in ("x", "y", "width", "height")}
        if box["width"] <= 0 or box["height"] <= 0:
            raise Refused("empty_answer", f.name, "a box without area")
        return {"label": labels[0], **box}
    # a span's text is the shown text's slice (markup there is the source's): only the other rules
    text = _readable(f.name, v["text"], plain=False) if str(v.get("text") or "").strip() else ""
    return {"label": labels[0], "start": int(v["start"]), "end": int(v["end"]), "text": text}


def _readable(name: str, text: Any, plain: bool = True) -> str:
    """A typed text as people can read it (``forge.checks.text_rules``: NFC; refused when empty or
    invisible, holding a control or bidi character, or markup: every text field is plain)."""
    try:
        return text_rules.clean(str(text or ""), f"the answer {name}", plain=plain)
    except text_rules.TextRefused as exc:
        raise Refused("empty_answer" if exc.code == "empty_field" else exc.code, name, exc.detail) from exc
