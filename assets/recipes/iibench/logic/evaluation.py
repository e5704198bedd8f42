"""II-Bench evaluation (App. C): the eight prompt settings byte for byte as the official
data_loader builds them, few-shot from the dev split, and the official eval.py reply reading."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from forge.evals import extract as ex
from forge.evals.requests import EvalRequest, RequestContext, SkipItem, letter_options, pick_shots
from forge.items.cells import as_list
from forge.llm.types import ImageInput, LLMRequest

from .taxonomy import official_label

FEWSHOT_INSTRUCTION = (
    "Instruction: Please try to answer the single-answer multiple choice question below based on the "
    "example(with answer) and the corresponding picture.",
    "Instruction: Please try to answer the single-answer multiple choice question below based on the "
    "examples(with answers) and the corresponding pictures.",
)


def build_request(c: RequestContext) -> LLMRequest:
    item, setting = c.item, c.setting
    v = {"question": item["question"], "options": letter_options(c.options)}
    imgs = c.images
    if setting.shots:
        shots = pick_shots(item, c.dev_items, setting.shots, c.seed)
        if len(shots) < setting.shots:
            raise SkipItem("not_enough_dev_examples")
        v = {
            **v,
            "instruction": FEWSHOT_INSTRUCTION[0 if setting.shots == 1 else 1],
            "examples": shot_blocks(shots),
            "picture": len(shots) + 1,
        }
        imgs = [ImageInput(path=c.data_dir / as_list(s["media_paths"])[0]) for s in shots] + c.images
        c.context["shots"] = [s["item_id"] for s in shots]
    if setting.keywords:
        kw = c.labels.get(setting.keywords)
        if kw in (None, "", []):
            raise SkipItem(f"no_{setting.keywords}_label")
        # official data_loader: meta_data's spelling (Title Case), a list joined with "," (no space)
        kws = kw if isinstance(kw, list) else [kw]
        v["keywords"] = ",".join(official_label(setting.keywords, k) for k in kws)
    return c.request(c.prompts[setting.prompt], v, imgs)


def shot_blocks(shots: list[dict[str, Any]]) -> str:
    """The dev examples of II-Bench's few-shot prompt, byte for byte as the official
    data_loader joins them: each "Question / Picture: <Picture k> / options / Answer: (X)"
    block ends with a newline and blocks are joined by one more newline (a blank line)."""
    return "\n".join(
        f"Question: {s['question']}\nPicture: <Picture {i}>\n{letter_options(as_list(s['options']))}\n"
        f"Answer: ({s['answer']})\n"
        for i, s in enumerate(shots, start=1)
    )


def parse_reply(er: EvalRequest, text: str | None, options: dict[str, Any]) -> ex.Extraction | None:
    """The official eval.py reading of a multiple-choice reply; option
    ``iibench_strict_extraction`` leaves it to the project's stricter generic reader."""
    if er.kind != "mcq" or options.get("iibench_strict_extraction"):
        return None
    return extract_iibench(text, er.options or [])


# -- the official eval.py rule (docs/evals.md, "II-Bench rules") ----------------------------------
#
# Re-implemented from the rule, not the code: (1) letters A–F written "(X)"; if there is none,
# (2) capital letters A–F standing alone as words anywhere in the reply; the label is the most
# frequent one, ties going to the tied letter that *first* appears last. Only when neither form
# is present: (3) option texts: an option counts when its stripped text occurs in the reply, or
# the whole reply occurs in the option; the last counted option wins. Nothing → a miss.
# Letters are never restricted to the item's option count, case is never folded, and a reply
# that is exactly "" is not parsed (the official loop skips it, the item still counts as wrong).

_IIB_PAREN = re.compile(r"\(([A-F])\)")
_IIB_WORD = re.compile(r"\b([A-F])\b")


def _most_frequent_last_tied(labels: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for x in labels:  # insertion order = order of first appearance
        counts[x] = counts.get(x, 0) + 1
    top = max(counts.values())
    return [x for x, c in counts.items() if c == top][-1]


def extract_iibench(reply: str | None, options: Sequence[str] | None = None) -> ex.Extraction:
    """II-Bench label of ``reply`` exactly as the official ``eval.py`` gives it."""
    if reply is None or reply == "":
        return ex.Extraction(ok=False, reason="empty")
    text = str(reply)
    found = _IIB_PAREN.findall(text)
    method = "iib_paren"
    if not found:
        found, method = _IIB_WORD.findall(text), "iib_word"
    if found:
        return ex.Extraction(letters=(_most_frequent_last_tied(found),), ok=True, method=method)
    hits = [chr(65 + i) for i, o in enumerate(options or []) if str(o).strip() in text or text in str(o)]
    if hits:
        return ex.Extraction(letters=(hits[-1],), ok=True, method="iib_option_text")
    return ex.Extraction(ok=False, reason="miss")
