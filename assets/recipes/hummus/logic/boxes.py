"""Reading an ImageBbox reply in whatever box convention the model used (assets/recipes/hummus/README.md,
"Box replies").

Table 1 asks for ``label: [top, left, height, width]`` normalised to 0..1. Models often answer
in another convention; each is converted to the requested normalised ``[top, left, height,
width]`` and the convention read is recorded (``order`` + ``scale`` = ``convention``, and the
``rule`` that decided it):

* order, from the reply's own words when it names them: ``(x1, y1), (x2, y2)`` point pairs,
  ``key: value`` pairs (``x1=``, ``"xmin":``, ``top:``, ``width:``...), or a list of names next
  to the numbers (``[x, y, w, h]``, ``[xmin, ymin, xmax, ymax]``, ``[ymin, xmin, ymax, xmax]``);
  a bare list of four numbers has no named order and follows ``order_rule``;
* scale: ``unit`` (0..1), ``thousand`` (0..1000, the grounding scale of open VLMs such as
  Qwen-VL) or ``pixels`` (needs the image size); numbers above 1 follow ``scale_rule`` when both
  readings fit the image.

Rules for what the reply does not say (config/evals.yaml ``benchmarks.hummus.scoring``):

``hummus_box_order`` (default ``requested``)
    an unnamed list is read in the requested order ``[top, left, height, width]``; only when
    that box would leave the image (or is empty) is it read as ``[x1, y1, x2, y2]``.
    ``xyxy``: the other way round (x1, y1, x2, y2 first).
``hummus_box_scale`` (default ``thousand``)
    numbers above 1 that fit both the 0..1000 grid and the image in pixels are read on the
    0..1000 grid (the prompt asks for *normalised* coordinates; 0..1000 is how open VLMs
    normalise). Pixels are read when the reply says ``px`` / ``pixel``, or a number exceeds
    1000, or the option is ``pixels``.

A list that mixes fractions below 1 with numbers above 1 (``[0.1, 0.2, 1.3, 0.4]``) is a unit
box that leaves the image, not a 0..1000 one. Anything that cannot be read, or that leaves the
image in every allowed reading, is a failure with its reason (scored 0, §6.1 success rate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ORDER_RULES = ("requested", "xyxy")
SCALE_RULES = ("thousand", "pixels")
EPS = 1e-3

_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
# Names of box coordinates → role: x0/y0 = left/top edge, x1/y1 = right/bottom edge, w/h = size.
_ROLE = {
    **dict.fromkeys(("x", "x0", "x1", "xmin", "x_min", "left"), "x0"),
    **dict.fromkeys(("y", "y0", "y1", "ymin", "y_min", "top"), "y0"),
    **dict.fromkeys(("x2", "xmax", "x_max", "right"), "x1"),
    **dict.fromkeys(("y2", "ymax", "y_max", "bottom"), "y1"),
    **dict.fromkeys(("w", "width"), "w"),
    **dict.fromkeys(("h", "height"), "h"),
}
NAMES = {("y0", "x0", "h", "w"): "tlhw", ("x0", "y0", "x1", "y1"): "xyxy", ("x0", "y0", "w", "h"): "xywh"}
NAMES[("y0", "x0", "y1", "x1")] = "yxyx"

_POINTS = re.compile(rf"\(\s*({_NUM})\s*,\s*({_NUM})\s*\)\s*(?:,|-|to|and)?\s*\(\s*({_NUM})\s*,\s*({_NUM})\s*\)")
_PX = r"(?:\s*px)?"  # "80px, 120px, ..." keeps its unit next to each number
_LIST = re.compile(rf"[\[(]\s*({_NUM}){_PX}\s*,\s*({_NUM}){_PX}\s*,\s*({_NUM}){_PX}\s*,\s*({_NUM}){_PX}\s*[\])]")
_BARE = re.compile(rf"(?<![\w.])({_NUM}){_PX}\s*,\s*({_NUM}){_PX}\s*,\s*({_NUM}){_PX}\s*,\s*({_NUM}){_PX}(?![\w.])")
_KEY = re.compile(rf"[\"']?\b([A-Za-z_]\w*)\b[\"']?\s*[:=]\s*({_NUM})(?![\w.])")
_NAMED_ORDER = re.compile(
    r"[\[(]?\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*[\])]?"
)
_PIXELS = re.compile(r"(?<![A-Za-z])(?:px|pixels?)\b", re.I)
_QWEN_REF = re.compile(r"<\|object_ref_start\|>(.*?)<\|object_ref_end\|>", re.S)
_JSON_LABEL = re.compile(r"[\"']label[\"']\s*:\s*[\"']([^\"']+)[\"']", re.I)
_TOKENS = re.compile(r"<\|[a-z_]+\|>")


@dataclass(frozen=True)
class ParsedBox:
    label: str
    box: list[float]  # normalised [top, left, height, width]
    order: str  # tlhw | xyxy | xywh | yxyx
    scale: str  # unit | thousand | pixels
    rule: str  # how order and scale were decided
    raw: list[float]

    @property
    def convention(self) -> str:
        return f"{self.order}_{self.scale}"

    def values(self) -> dict:
        return {
            "label": self.label,
            "box": self.box,
            "convention": self.convention,
            "order": self.order,
            "scale": self.scale,
            "rule": self.rule,
            "raw": self.raw,
        }


class BoxError(ValueError):
    """Why a reply holds no usable box; ``reason`` is the stable code."""

    def __init__(self, reason: str, message: str = ""):
        super().__init__(message or reason)
        self.reason = reason


def to_tlhw(nums: list[float], roles: tuple[str, ...]) -> list[float]:
    """Four numbers in the order ``roles`` → [top, left, height, width] on the same scale."""
    v = dict(zip(roles, nums))
    left, top = v["x0"], v["y0"]
    w = v["w"] if "w" in v else v["x1"] - left
    h = v["h"] if "h" in v else v["y1"] - top
    return [top, left, h, w]


def fits(tlhw: list[float]) -> bool:
    """A normalised box inside the image with a positive size."""
    t, lft, h, w = tlhw
    return min(t, lft) >= -EPS and h > 0 and w > 0 and t + h <= 1 + EPS and lft + w <= 1 + EPS


def _normalise(tlhw: list[float], scale: str, size: tuple[int, int] | None) -> list[float]:
    if scale == "unit":
        return tlhw
    if scale == "thousand":
        return [x / 1000 for x in tlhw]
    width, height = size  # type: ignore[misc]
    t, lft, h, w = tlhw
    return [t / height, lft / width, h / height, w / width]


def _clip(tlhw: list[float]) -> list[float]:
    t, lft = max(tlhw[0], 0.0), max(tlhw[1], 0.0)
    return [round(t, 6), round(lft, 6), round(min(tlhw[2], 1 - t), 6), round(min(tlhw[3], 1 - lft), 6)]


def scales(nums: list[float], text: str, size: tuple[int, int] | None, scale_rule: str) -> tuple[list[str], str]:
    """The scales to try for ``nums`` (first that fits wins) and the rule that chose them."""
    if any(x < 0 for x in nums):
        raise BoxError("box_out_of_range", f"negative coordinate in {nums}")
    if max(nums) <= 1:
        return ["unit"], "unit_values"
    if any(0 < x < 1 for x in nums):  # fractions next to numbers above 1: a unit box leaving the image
        return ["unit"], "fractions_mean_unit_scale"
    if _PIXELS.search(text):
        return ["pixels"], "says_pixels"
    if max(nums) > 1000:
        return ["pixels"], "above_1000"
    if size is None:
        return ["thousand"], "no_image_size"
    order = ["pixels", "thousand"] if scale_rule == "pixels" else ["thousand", "pixels"]
    return order, f"hummus_box_scale={scale_rule}"


def _label_before(text: str, start: int) -> str:
    line = text[:start].rsplit("\n", 1)[-1]
    line = _TOKENS.sub(" ", line)
    head = line.split(":")[0] if ":" in line else line
    head = re.sub(r"\b(?:bounding box|bbox|box|coordinates?)\b.*$", "", head, flags=re.I)
    return head.strip().strip("\"'`*-•=[({ ").strip()


def _label(text: str, start: int) -> str:
    for rx in (_QWEN_REF, _JSON_LABEL):
        m = rx.search(text)
        if m:
            return " ".join(m.group(1).split())
    return _label_before(text, start)


def _named_order(text: str) -> tuple[str, ...] | None:
    for m in _NAMED_ORDER.finditer(text):
        roles = tuple(_ROLE.get(g.lower()) for g in m.groups())
        if None not in roles and _valid_roles(roles):  # type: ignore[arg-type]
            return roles  # type: ignore[return-value]
    return None


def _valid_roles(roles: tuple[str, ...]) -> bool:
    s = set(roles)
    return len(roles) == 4 and s in ({"x0", "y0", "x1", "y1"}, {"x0", "y0", "w", "h"})


def _keyed(text: str) -> tuple[list[float], tuple[str, ...], int] | None:
    """``x1=10, y1=20, ...`` / ``{"top": 0.1, "left": ...}``: four named numbers."""
    found: dict[str, float] = {}
    start = -1
    for m in _KEY.finditer(text):
        role = _ROLE.get(m.group(1).lower())
        if role is None or role in found:
            continue
        found[role] = float(m.group(2))
        start = m.start() if start < 0 else start
        roles = tuple(found)
        if len(roles) == 4:
            return (list(found.values()), roles, start) if _valid_roles(roles) else None
    return None


def parse_box(
    reply: str | None,
    image_size: tuple[int, int] | None = None,
    order_rule: str = "requested",
    scale_rule: str = "thousand",
) -> ParsedBox:
    """The first box of ``reply`` as a normalised [top, left, height, width]; raises BoxError.

    ``image_size`` = (width, height) in pixels, needed only for pixel boxes."""
    if order_rule not in ORDER_RULES or scale_rule not in SCALE_RULES:
        raise ValueError(f"hummus_box_order in {ORDER_RULES}, hummus_box_scale in {SCALE_RULES}")
    text = str(reply or "")
    if not text.strip():
        raise BoxError("empty")
    candidates: list[tuple[str, ...]]
    if m := _POINTS.search(text):
        nums, start = [float(g) for g in m.groups()], m.start()
        candidates, order_how = [("x0", "y0", "x1", "y1")], "point_pairs"
    elif k := _keyed(text):
        nums, roles, start = k
        candidates, order_how = [roles], "named_keys"
    elif m := (_LIST.search(text) or _BARE.search(text)):
        nums, start = [float(g) for g in m.groups()], m.start()
        named = _named_order(text[: m.start()] + " " + text[m.end() :])
        if named:
            candidates, order_how = [named], "named_order"
        else:
            tlhw, xyxy = ("y0", "x0", "h", "w"), ("x0", "y0", "x1", "y1")
            candidates = [tlhw, xyxy] if order_rule == "requested" else [xyxy, tlhw]
            order_how = f"hummus_box_order={order_rule}"
    else:
        raise BoxError("no_box", "no four box coordinates in the reply")
    scale_list, scale_how = scales(nums, text, image_size, scale_rule)
    for scale in scale_list:
        if scale == "pixels" and image_size is None:
            raise BoxError("box_needs_image_size", f"pixel box {nums} but the item has no image size")
        for roles in candidates:
            box = _normalise(to_tlhw(nums, roles), scale, image_size)
            if fits(box):
                return ParsedBox(
                    _label(text, start),
                    _clip(box),
                    NAMES.get(roles, "".join(r[0] for r in roles)),
                    scale,
                    f"{order_how}; {scale_how}",
                    nums,
                )
    raise BoxError("box_out_of_range", f"{nums} leaves the image in every reading ({scale_how}; {order_how})")
