"""II-Bench evaluation requests (App. C): the eight prompt settings, few-shot from the dev split."""

from __future__ import annotations

from forge.evals.requests import RequestContext, SkipItem, as_list, letter_options, pick_shots
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
        blocks = []
        for i, s in enumerate(shots, start=1):
            sopts = as_list(s["options"])
            blocks.append(f"Question: {s['question']}\nPicture: <Picture {i}>\n{letter_options(sopts)}\n"
                          f"Answer: ({s['answer']})\n\n")
        v = {**v, "instruction": FEWSHOT_INSTRUCTION[0 if setting.shots == 1 else 1],
             "examples": "".join(blocks), "picture": len(shots) + 1}
        imgs = [ImageInput(path=c.data_dir / as_list(s["media_paths"])[0]) for s in shots] + c.images
        c.context["shots"] = [s["item_id"] for s in shots]
    if setting.keywords:
        kw = c.labels.get(setting.keywords)
        if kw in (None, "", []):
            raise SkipItem(f"no_{setting.keywords}_label")
        v["keywords"] = ", ".join(map(str, kw)) if isinstance(kw, list) else str(kw)
    return c.request(c.prompts[setting.prompt], v, imgs)
