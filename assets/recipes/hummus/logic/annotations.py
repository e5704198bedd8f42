"""Validation of one Hummus annotation (§4): verdict, conceptual metaphors, image regions,
caption highlight, explanation and other figurative devices.

Every check returns problems as (code, message) pairs: the code is the stable reject
reason, the message goes back to the model as refine feedback. Repairs that change no
meaning (case of a metaphor, spans re-anchored on the original caption) are applied and
noted, not rejected.

Human annotations (``human=True``: the published release, imported as gold) are taken as
they are: the style and length limits meant for generated text (an optional explanation cap, short
upper-case domains, the fixed device list, required incongruities) do not apply; Title Case
names (``Humans Are Animals (Woman Is Mosquito); Racket Is Flyswatter``), figures outside the
list (personification, zoomorphism, analogy, onomatopoeia, ...) and ``<u></u>`` spans are
accepted; values the code cannot place are kept verbatim and listed in ``Problems.kept``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .taxonomy import metaphorical, normalise_device, taxonomy, verdicts

BAD_METAPHOR = "bad_metaphor_format"
BOX_OUT_OF_BOUNDS = "box_out_of_bounds"
INVALID_SPAN = "invalid_span"
EXPLANATION_TOO_LONG = "explanation_too_long"
MISSING_FIELD = "missing_annotation"
UNKNOWN_DEVICE = "unknown_device"
BAD_VERDICT = "bad_verdict"

# Order in which a failed annotation's reject reason is chosen (most specific first).
REASON_ORDER = (
    BAD_VERDICT,
    MISSING_FIELD,
    BAD_METAPHOR,
    BOX_OUT_OF_BOUNDS,
    INVALID_SPAN,
    EXPLANATION_TOO_LONG,
    UNKNOWN_DEVICE,
)

# "TARGET IS SOURCE" (§4.2; "LOVE IS A JOURNEY", "HUMANS ARE ANIMALS", "ANIMALS/HUMANS ARE
# HUMANS/ANIMALS"): two short noun phrases joined by one IS / ARE.
_COPULA = re.compile(r"\s+(IS|ARE)\s+")
_DOMAIN = re.compile(r"^[A-Z0-9][A-Z0-9 '&/\-]*$")
MAX_DOMAIN_WORDS = 6
_TAG = re.compile(r"</?i>", re.IGNORECASE)
_HUMAN_TAG = re.compile(r"<(/?)(?:u|i|b|em)>", re.IGNORECASE)  # span markup seen in human highlights


@dataclass
class Problems:
    items: list[tuple[str, str]] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # (kind, value) kept as written (human data)

    def add(self, code: str, message: str) -> None:
        self.items.append((code, message))

    @property
    def codes(self) -> list[str]:
        return [c for c, _ in self.items]

    def __bool__(self) -> bool:
        return bool(self.items)

    def primary(self) -> str:
        codes = self.codes
        return next((c for c in REASON_ORDER if c in codes), codes[0] if codes else "")

    def feedback(self) -> str:
        return "\n".join(f"- {m}" for _, m in self.items)


# -- conceptual metaphors ------------------------------------------------------------
def normalise_metaphor(raw: str) -> str:
    t = " ".join(str(raw).replace("\u2019", "'").split()).upper()
    return t.rstrip(".")


def metaphor_problem(raw: str) -> str | None:
    """Why ``raw`` is not in ``TARGET IS SOURCE`` form, or None when it is."""
    t = normalise_metaphor(raw)
    parts = _COPULA.split(t)
    if len(parts) != 3:
        n = (len(parts) - 1) // 2
        return f"{raw!r} must be 'TARGET IS SOURCE' with exactly one IS/ARE joining two domains (found {n})"
    target, _, source = parts
    for side, name in ((target, "target"), (source, "source")):
        if not side or not _DOMAIN.match(side):
            return f"{raw!r}: the {name} domain {side!r} must be a short noun phrase of letters"
        if len(side.split()) > MAX_DOMAIN_WORDS:
            return f"{raw!r}: the {name} domain has more than {MAX_DOMAIN_WORDS} words; name the domain, not the scene"
    if _strip_article(target) == _strip_article(source):
        return f"{raw!r}: target and source are the same domain"
    return None


def split_metaphor_names(raw: str | list[str] | None) -> list[str]:
    """The metaphors of a released ``conceptual_metaphor`` field, in order: ``;``-separated
    names, each followed by the names in its parentheses, and ``X Are Y / Y Are X`` pairs
    split when both sides name a metaphor (``Humans Are Animals (Woman Is Mosquito); Racket Is
    Flyswatter`` → three names; ``ANIMALS/HUMANS ARE HUMANS/ANIMALS`` stays one)."""
    if raw is None:
        return []
    parts = raw if isinstance(raw, list) else re.split(r";(?![^()]*\))", str(raw))
    out: list[str] = []
    for part in parts:
        part = " ".join(str(part).split())
        inner = re.findall(r"\(([^()]*)\)", part)
        head = re.sub(r"\s*\([^()]*\)\s*", " ", part).strip()
        for name in [head, *[x for i in inner for x in i.split(";")]]:
            sides = [x.strip() for x in name.split("/")]
            names = sides if len(sides) > 1 and all(human_metaphor_problem(x) is None for x in sides) else [name]
            for n in names:
                n = " ".join(n.split()).strip(" .")
                if n and n not in out:
                    out.append(n)
    return out


def human_metaphor_problem(raw: str) -> str | None:
    """A human name is readable when it has exactly one IS / ARE (any case) between two
    non-empty domains; no word limit or character set (human gold keeps its own wording)."""
    parts = _COPULA.split(" " + " ".join(str(raw).split()).upper() + " ")
    if len(parts) != 3 or not parts[0].strip() or not parts[2].strip():
        return f"{raw!r} is not 'TARGET IS SOURCE' with one IS/ARE"
    return None


def _strip_article(s: str) -> str:
    return re.sub(r"^(A|AN|THE)\s+", "", s)


def split_metaphor(m: str) -> tuple[str, str]:
    target, _, source = _COPULA.split(normalise_metaphor(m))
    return target, source


# -- image regions ---------------------------------------------------------------------
@dataclass(frozen=True)
class Region:
    label: str
    top: float  # normalised to the image height, 0..1
    left: float  # normalised to the image width, 0..1
    height: float
    width: float
    x0: int  # pixels, x right, y down; x1/y1 exclusive
    y0: int
    x1: int
    y1: int

    @property
    def norm_tlhw(self) -> list[float]:
        return [self.top, self.left, self.height, self.width]

    def as_answer(self) -> str:
        """Table 1's ImageBbox answer format: ``label: [top, left, height, width]``."""
        return f"{self.label}: [" + ", ".join(f"{v:.3f}" for v in self.norm_tlhw) + "]"


def text_fields(ann: Any) -> dict[str, Any]:
    """The caption spans and explanation columns of ``hummus_annotations`` for one annotation
    (the LLM's or a person's)."""
    hl = ann.highlight
    return {
        "caption_highlighted": hl.highlighted if hl else None,
        "span_texts": hl.spans if hl else [],
        "span_starts": [a for a, _ in hl.offsets] if hl else [],
        "span_ends": [b for _, b in hl.offsets] if hl else [],
        "explanation": ann.explanation or None,
        "explanation_words": word_count(ann.explanation),
    }


def region_rows(
    annotation_id: str, frame_id: str, batch: str, regions: list[Region], width: int, height: int
) -> list[dict[str, Any]]:
    """The ``hummus_regions`` rows of one annotation's boxes (the LLM's or a person's)."""
    return [
        {
            "annotation_id": annotation_id,
            "region_index": k,
            "frame_id": frame_id,
            "batch": batch,
            "label": rg.label,
            "box_px_x0": rg.x0,
            "box_px_y0": rg.y0,
            "box_px_x1": rg.x1,
            "box_px_y1": rg.y1,
            "box_norm_top": rg.top,
            "box_norm_left": rg.left,
            "box_norm_height": rg.height,
            "box_norm_width": rg.width,
            "image_width": int(width),
            "image_height": int(height),
        }
        for k, rg in enumerate(regions)
    ]


def region_from_norm(
    label: str, box: Any, width: int, height: int, eps: float = 1e-3
) -> tuple[Region | None, str | None]:
    """A region from a normalised ``[top, left, height, width]`` box, or why it is invalid."""
    label = " ".join(str(label or "").split())
    if not label:
        return None, "a region has no label (say which object the box marks)"
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        return None, f"region {label!r}: box must be [top, left, height, width], got {box!r}"
    try:
        top, left, h, w = (float(v) for v in box)
    except (TypeError, ValueError):
        return None, f"region {label!r}: box values must be numbers, got {box!r}"
    if min(top, left) < -eps or h <= 0 or w <= 0 or top + h > 1 + eps or left + w > 1 + eps:
        return None, (
            f"region {label!r}: box {list(box)} is outside the image; coordinates are fractions "
            "of the image size (0..1) with top+height ≤ 1 and left+width ≤ 1"
        )
    top, left = max(top, 0.0), max(left, 0.0)
    h, w = min(h, 1.0 - top), min(w, 1.0 - left)
    x0, y0 = int(round(left * width)), int(round(top * height))
    x1, y1 = int(round((left + w) * width)), int(round((top + h) * height))
    if x1 - x0 < 1 or y1 - y0 < 1:
        return None, f"region {label!r}: box {list(box)} is smaller than one pixel on a {width}x{height} image"
    return Region(
        label, round(top, 6), round(left, 6), round(h, 6), round(w, 6), x0, y0, min(x1, width), min(y1, height)
    ), None


def placeholder_region(r: Any, width: int, height: int) -> Region | None:
    """Stub output only (``lenient``): a placeholder box outside the image, scaled into it, so the
    offline demo has boxes to draw, review and move (its problem is still reported). None when it
    cannot be read as four non-negative numbers."""
    box = r.get("box") if isinstance(r, dict) else None
    try:
        top, left, h, w = (max(float(v), 0.0) for v in box)
    except (TypeError, ValueError):
        return None
    scale = max(top + h, left + w, 1.0)
    region, _ = region_from_norm(r.get("label", ""), [top / scale, left / scale, h / scale, w / scale], width, height)
    return region


# -- caption highlight -------------------------------------------------------------------
@dataclass(frozen=True)
class Highlight:
    highlighted: str  # the original caption with <i></i> around each span
    spans: list[str]
    offsets: list[tuple[int, int]]  # character [start, end) in the caption


def parse_highlight(caption: str, highlighted: str) -> tuple[Highlight | None, str | None, bool]:
    """Spans marked with ``<i></i>`` in ``highlighted``, anchored in ``caption``.

    Returns (highlight, problem, repaired). Each span must be an exact substring of the
    caption; when the model also changed text outside the tags, the spans are re-anchored
    on the original caption (``repaired``).
    """
    tokens = _TAG.findall(highlighted or "")
    if not tokens:
        return None, "the caption highlight has no <i></i> span", False
    expect_open = True
    for t in tokens:
        is_open = not t.startswith("</")
        if is_open != expect_open:
            return None, "the <i></i> tags are unbalanced or nested", False
        expect_open = not expect_open
    if not expect_open:
        return None, "an <i> tag is never closed", False
    pieces = _TAG.split(highlighted)
    spans = pieces[1::2]
    if any(not s.strip() for s in spans):
        return None, "an <i></i> span is empty", False
    plain = "".join(pieces)
    offsets: list[tuple[int, int]] = []
    if plain == caption:
        pos = 0
        for k, piece in enumerate(pieces):
            if k % 2:
                offsets.append((pos, pos + len(piece)))
            pos += len(piece)
        return Highlight(highlighted, spans, offsets), None, False
    start = 0
    for s in spans:
        at = caption.find(s, start)
        if at < 0:
            at = caption.find(s)
        if at < 0:
            return None, f"the highlighted span {s!r} is not an exact substring of the caption {caption!r}", False
        offsets.append((at, at + len(s)))
        start = at + len(s)
    order = sorted(zip(offsets, spans))
    if any(a[0][1] > b[0][0] for a, b in zip(order, order[1:])):
        return None, "highlighted spans overlap", False
    out, pos = [], 0
    for (a, b), _ in order:
        out += [caption[pos:a], "<i>", caption[a:b], "</i>"]
        pos = b
    out.append(caption[pos:])
    return Highlight("".join(out), [s for _, s in order], [o for o, _ in order]), None, True


def word_count(text: str) -> int:
    return len(str(text or "").split())


# -- the whole annotation ------------------------------------------------------------------
@dataclass
class Annotation:
    verdict: str
    incongruities: list[str]
    resolution: str
    metaphors: list[str] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    highlight: Highlight | None = None
    explanation: str = ""
    devices: list[str] = field(default_factory=list)
    discard_reason: str = ""


def human_highlight(caption: str, highlighted: str) -> tuple[Highlight | None, str | None, list[str]]:
    """A human caption highlight as the benchmark's ``<i>`` spans, anchored in the caption when
    they can be (else kept verbatim with the reason: it is the gold), and the ``<u>`` spans.

    The release marks spans with ``<i>`` and, inside them or alone, ``<u>``: with ``<i>`` present
    the ``<u>`` marks are a finer focus and are returned apart; alone they are the spans."""
    raw = highlighted or ""
    underlined = re.findall(r"<u>(.*?)</u>", raw, flags=re.IGNORECASE | re.DOTALL)
    if _TAG.search(raw):
        marked = re.sub(r"</?(?:u|b|em)>", "", raw, flags=re.IGNORECASE)
    else:
        marked = _HUMAN_TAG.sub(lambda m: f"<{m.group(1)}i>", raw)
    hl, why, _ = parse_highlight(caption, marked)
    if hl is not None:
        return hl, None, underlined
    spans = _TAG.split(marked)[1::2]
    return Highlight(marked, [s for s in spans if s.strip()], []), why, underlined


def _validate_human(
    data: dict[str, Any], caption: str, width: int, height: int, verdict: str
) -> tuple[Annotation, Problems]:
    p = Problems()
    ann = Annotation(
        verdict=verdict,
        incongruities=[str(x).strip() for x in data.get("incongruities") or [] if str(x).strip()],
        resolution=str(data.get("resolution") or "").strip(),
        discard_reason=str(data.get("discard_reason") or "").strip(),
    )
    for raw in data.get("devices") or []:
        d = normalise_device(raw)
        if d is None:
            d = " ".join(str(raw).strip().lower().split())
            p.kept.append(("figure", d))
        if d and d not in ann.devices:
            ann.devices.append(d)
    if verdict in metaphorical():
        for m in split_metaphor_names(data.get("metaphors")):
            if human_metaphor_problem(m):
                p.kept.append(("metaphor_unparsed", m))
            ann.metaphors.append(m)
        for r in data.get("regions") or []:
            region, why = region_from_norm(r.get("label", ""), r.get("box"), width, height)
            if why:
                p.kept.append(("box_unusable", why))
            else:
                ann.regions.append(region)
        if str(data.get("caption_highlighted") or "").strip():
            ann.highlight, why, underlined = human_highlight(caption, str(data["caption_highlighted"]))
            if why:
                p.kept.append(("span_not_anchored", why))
            for u in underlined:
                p.kept.append(("underlined_span", u))
        ann.explanation = " ".join(str(data.get("explanation") or "").split())
        for part, present in (
            ("metaphor", ann.metaphors),
            ("box", ann.regions),
            ("caption_highlight", ann.highlight),
            ("explanation", ann.explanation),
        ):
            if not present:
                p.kept.append(("missing", part))
    return ann, p


def validate_annotation(
    data: dict[str, Any],
    caption: str,
    width: int,
    height: int,
    max_words: int | None = None,
    lenient: bool = False,
    human: bool = False,
) -> tuple[Annotation | None, Problems]:
    """Check a reply against §4 and return the normalised annotation (None when invalid).

    ``lenient`` (stub output only, see ``forge.llm.stub.advisory``): the problems are still all
    reported, but the annotation is returned with what could be read (a malformed metaphor kept
    as written, a box outside the image scaled into it, an invalid span left out) instead of None;
    an unknown verdict stays None.
    ``human`` (imported gold): only the verdict can fail; see the module docstring.
    """
    if human:
        canon = {v.lower(): v for v in verdicts()}
        verdict = str(data.get("verdict") or "").strip()
        if verdict.lower() not in canon:
            p = Problems()
            p.add(BAD_VERDICT, f"verdict {verdict!r} is not one of {verdicts()}")
            return None, p
        return _validate_human(data, caption, width, height, canon[verdict.lower()])
    p = Problems()  # max_words None: no cap (the paper's gold explanations had none; §6 asks it of models)
    verdict = str(data.get("verdict") or "").strip()
    canon = {v.lower(): v for v in verdicts()}
    if verdict.lower() not in canon:
        p.add(BAD_VERDICT, f"verdict {verdict!r} is not one of {verdicts()}")
        return None, p
    verdict = canon[verdict.lower()]
    ann = Annotation(
        verdict=verdict,
        incongruities=[str(x).strip() for x in data.get("incongruities") or [] if str(x).strip()],
        resolution=str(data.get("resolution") or "").strip(),
        discard_reason=str(data.get("discard_reason") or "").strip(),
    )
    for raw in data.get("devices") or []:
        d = normalise_device(raw)
        if d is None and " ".join(str(raw).strip().lower().split()) in taxonomy().get("metaphor_types", []):
            p.repairs.append(f"{raw!r} is metaphor use (§2), not another figurative device: left out of devices")
        elif d is None:
            p.add(UNKNOWN_DEVICE, f"figurative device {raw!r} is not one of {taxonomy()['devices']}")
        elif d not in ann.devices:
            ann.devices.append(d)
    if not ann.incongruities:
        p.add(MISSING_FIELD, "note the incongruities in the image (at least one)")
    if verdict == "Discard" and not ann.discard_reason:
        p.add(MISSING_FIELD, "a Discard needs a discard_reason (which incongruity stays unresolved)")
    if verdict in metaphorical():
        raw_ms = data.get("metaphors") or []
        if not raw_ms:
            p.add(MISSING_FIELD, "a Yes/WIDLII item needs at least one conceptual metaphor")
        for m in raw_ms:
            why = metaphor_problem(m)
            if why:
                p.add(BAD_METAPHOR, why)
                if lenient and str(m).strip():
                    ann.metaphors.append(str(m).strip())
            else:
                norm = normalise_metaphor(m)
                if norm != m:
                    p.repairs.append(f"metaphor {m!r} → {norm!r}")
                if norm not in ann.metaphors:
                    ann.metaphors.append(norm)
        raw_regions = data.get("regions") or []
        if not raw_regions:
            p.add(MISSING_FIELD, "a Yes/WIDLII item needs at least one metaphor-related image region")
        for r in raw_regions:
            region, why = region_from_norm(r.get("label", ""), r.get("box"), width, height)
            if why:
                p.add(BOX_OUT_OF_BOUNDS, why)
                region = placeholder_region(r, width, height) if lenient else None
            if region is not None:
                ann.regions.append(region)
        hl, why, repaired = parse_highlight(caption, str(data.get("caption_highlighted") or ""))
        if why:
            p.add(INVALID_SPAN, why)
        else:
            ann.highlight = hl
            if repaired:
                p.repairs.append("caption highlight re-anchored on the original caption")
        ann.explanation = " ".join(str(data.get("explanation") or "").split())
        n = word_count(ann.explanation)
        if n == 0:
            p.add(MISSING_FIELD, "a Yes/WIDLII item needs an explanation of how the metaphor makes it funny")
        elif max_words is not None and n > max_words:
            p.add(EXPLANATION_TOO_LONG, f"the explanation has {n} words; use at most {max_words}")
    return (ann if lenient or not p else None), p


VERDICT_CHANGED = "verdict_changed"


def verdict_change(first: str | None, new: str | None) -> str | None:
    """Why a regenerated annotation may not carry ``new`` after ``first`` (None = allowed).

    Feedback on the detail annotation never asks for another verdict, so a reply that answers it
    by switching to No / Discard (where no detail is checked) dodges the checks and moves the
    Yes/No balance. Allowed: an unreadable first verdict (the feedback asked for one), and
    WIDLII → No / Discard (§4.2: "WIDLII items could be re-labelled as No or Discard items")."""
    canon = {v.lower(): v for v in verdicts()}
    a, b = canon.get(str(first or "").strip().lower()), canon.get(str(new or "").strip().lower())
    if a is None or b is None or a == b:
        return None
    if a == "WIDLII" and b in ("No", "Discard"):
        return None
    return f"the verdict changed from {a} to {b} while revising the detail annotation; the feedback did not ask for it"


def verdict_only(data: dict[str, Any]) -> Annotation | None:
    """The stage-1 part of a reply whose detailed annotation failed its checks (§4.1 then §4.2):
    the verdict, incongruities, resolution, discard reason and the devices on the list. The
    Yes/No label of Classification rests on the verdict alone, so it is kept; metaphors,
    regions, span and explanation are left out (None when the verdict itself is unreadable)."""
    canon = {v.lower(): v for v in verdicts()}
    verdict = str(data.get("verdict") or "").strip().lower()
    if verdict not in canon:
        return None
    found = [normalise_device(d) for d in data.get("devices") or []]
    return Annotation(
        verdict=canon[verdict],
        incongruities=[str(x).strip() for x in data.get("incongruities") or [] if str(x).strip()],
        resolution=str(data.get("resolution") or "").strip(),
        discard_reason=str(data.get("discard_reason") or "").strip(),
        devices=list(dict.fromkeys(d for d in found if d)),
    )
