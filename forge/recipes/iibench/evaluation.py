"""II-Bench evaluation (App. C): the eight prompt settings byte for byte as the official
data_loader builds them, few-shot from the dev split, and the official eval.py reply reading."""

from __future__ import annotations

from typing import Any

from forge.evals import extract as ex
from forge.evals.requests import EvalRequest, RequestContext, SkipItem, as_list, letter_options, pick_shots
from forge.llm.types import ImageInput, LLMRequest

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
        # official data_loader: a list of keywords is joined with "," (no space)
        v["keywords"] = ",".join(map(str, kw)) if isinstance(kw, list) else str(kw)
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
    return ex.extract_iibench(text, er.options or [])
