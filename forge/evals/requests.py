"""Turn benchmark items into model requests for one setting, and replies into predictions.

``build_requests`` renders each item for a setting (images attached per the setting's
input), ``predictions`` parses the replies with ``forge.evals.extract`` and scores what
can be scored per item without a judge or an embedder (``forge.evals.scoring`` does the rest).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from forge.evals import extract as ex
from forge.evals.config import ModelSpec, Setting
from forge.evals.scorers import chosen_option_type, error_composition, rotations, vimu_set_score
from forge.llm.types import ImageInput, LLMRequest, LLMResult

# What the reply of each (benchmark, task) is parsed as.
KINDS = {
    ("iibench", "mcq"): "mcq", ("vague", "mcq"): "mcq", ("maia", "statement_verification"): "mcq",
    ("maia", "open_ended"): "text", ("vimu", "open_ended"): "text", ("vimu", "multi_select"): "multi",
    ("hummus", "classification"): "yesno", ("hummus", "naming"): "naming", ("hummus", "image_box"): "box",
    ("hummus", "image_label"): "word", ("hummus", "caption_highlight"): "highlight",
    ("hummus", "explanation"): "text",
}
CIRCULAR_BENCHMARKS = {"iibench", "vague", "maia"}   # options shown with letters that carry no meaning
FEWSHOT_INSTRUCTION = (
    "Instruction: Please try to answer the single-answer multiple choice question below based on the "
    "example(with answer) and the corresponding picture.",
    "Instruction: Please try to answer the single-answer multiple choice question below based on the "
    "examples(with answers) and the corresponding pictures.",
)


@dataclass
class EvalRequest:
    item: dict[str, Any]
    kind: str
    options: list[str] | None
    answer: str
    variant: int
    request: LLMRequest
    n_images: int
    context: dict[str, Any] = field(default_factory=dict)


def jload(v: Any) -> dict[str, Any]:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return {}
    if isinstance(v, dict):
        return v
    try:
        out = json.loads(v)
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def as_list(v: Any) -> list:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return []
    return [x.item() if hasattr(x, "item") else x for x in v]


def letter_options(options: Sequence[str], style: str = "paren") -> str:
    if style == "dot":
        return "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(options))
    return "\n".join(f"({chr(65 + i)}) {o}" for i, o in enumerate(options))


def uniform(paths: Sequence[str], n: int) -> list[str]:
    """``n`` paths sampled uniformly over the sequence (all when there are fewer)."""
    paths = list(paths)
    if n <= 0 or not paths:
        return []
    if len(paths) <= n:
        return paths
    idx = np.linspace(0, len(paths) - 1, n).round().astype(int)
    return [paths[i] for i in idx]


@lru_cache(maxsize=4)
def black_jpeg(width: int = 640, height: int = 360) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (0, 0, 0)).save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def images_for(item: dict[str, Any], setting: Setting, spec: ModelSpec, data_dir: Path) -> list[ImageInput]:
    paths = as_list(item.get("media_paths"))
    n = setting.n_frames(spec)
    if setting.input in ("none", "description") or n == 0:
        return []
    if setting.input == "black":
        return [ImageInput(data=black_jpeg()) for _ in range(n)]
    if setting.input in ("first_frame", "image", "self_caption"):
        chosen = paths[:1]
    else:
        chosen = uniform(paths, n)
    return [ImageInput(path=data_dir / p) for p in chosen]


def _req(item_id: str, prompt: Any, variables: dict[str, Any], images: list[ImageInput], spec: ModelSpec) -> LLMRequest:
    return LLMRequest(item_id=item_id, prompt=prompt, variables=variables, images=images, params=dict(spec.params))


def request_id(item_id: str, variant: int) -> str:
    return item_id if variant == 0 else f"{item_id}#r{variant}"


def build_requests(benchmark: str, setting: Setting, items: list[dict[str, Any]], prompts: dict[str, Any],
                   spec: ModelSpec, data_dir: Path, *, circular: bool = False,
                   dev_items: list[dict[str, Any]] | None = None, descriptions: dict[str, str] | None = None,
                   captions: dict[str, str] | None = None, seed: str = "eval") -> tuple[list[EvalRequest], list[tuple[str, str]]]:
    """Requests for every applicable item, and ``(item_id, reason)`` for items left out."""
    out: list[EvalRequest] = []
    skipped: list[tuple[str, str]] = []
    for item in items:
        kind = KINDS.get((benchmark, item["task"]))
        if kind is None:
            skipped.append((item["item_id"], f"task_not_evaluated:{item['task']}"))
            continue
        extra, labels = jload(item.get("extra")), jload(item.get("labels"))
        if setting.tasks and item.get("category") not in setting.tasks:
            continue   # e.g. ViMU guided: RM and SV only (App. G)
        options = as_list(item.get("options")) or None
        variants = [(options, item["answer"])]
        if circular and kind == "mcq" and benchmark in CIRCULAR_BENCHMARKS and options and setting.variant != "free_form":
            variants = rotations(options, item["answer"])
        images = images_for(item, setting, spec, data_dir)
        if setting.input in ("frames", "first_frame", "image", "self_caption") and not images:
            skipped.append((item["item_id"], "no_media"))
            continue
        for k, (opts, answer) in enumerate(variants):
            rid = request_id(item["item_id"], k)
            ctx: dict[str, Any] = {}
            if benchmark == "iibench":
                v = {"question": item["question"], "options": letter_options(opts)}
                imgs = images
                if setting.shots:
                    shots = pick_shots(item, dev_items or [], setting.shots, seed)
                    if len(shots) < setting.shots:
                        skipped.append((item["item_id"], "not_enough_dev_examples"))
                        break
                    v = {**v, "instruction": FEWSHOT_INSTRUCTION[0 if setting.shots == 1 else 1],
                         "examples": iibench_shot_blocks(shots), "picture": len(shots) + 1}
                    imgs = [ImageInput(path=data_dir / as_list(s["media_paths"])[0]) for s in shots] + images
                    ctx["shots"] = [s["item_id"] for s in shots]
                if setting.keywords:
                    kw = labels.get(setting.keywords)
                    if kw in (None, "", []):
                        skipped.append((item["item_id"], f"no_{setting.keywords}_label"))
                        break
                    # official data_loader: a list of keywords is joined with "," (no space)
                    v["keywords"] = ",".join(map(str, kw)) if isinstance(kw, list) else str(kw)
                req = _req(rid, prompts[setting.prompt], v, imgs, spec)
            elif benchmark == "vimu":
                if VIMU_PROMPTS["OE"] in prompts:     # the official prompts (config prompts:)
                    name, v = vimu_prompt(item, extra, setting.variant or "unguided")
                    req = _req(rid, prompts[name], v, images, spec)
                else:                                 # the recipe's own rendered prompts (extra.prompts)
                    text = (extra.get("prompts") or {}).get(setting.variant or "unguided")
                    if not text:
                        skipped.append((item["item_id"], f"no_{setting.variant}_prompt"))
                        break
                    req = _req(rid, prompts[setting.prompt], {"prompt": text}, images, spec)
            elif benchmark == "vague":
                # official utils/util.py: the indirect utterance, options "A: text" sorted by letter
                v = {"utterance": item.get("indirect_expression") or item["question"],
                     "choices": "\n".join(f"{chr(65 + i)}: {o}" for i, o in enumerate(opts or []))}
                if setting.variant == "free_form":   # App. I: answer in words, scored against the correct option
                    v = {"utterance": v["utterance"], "subject": labels.get("subject") or "the listener"}
                    ctx["answer_type"] = "free_form"
                if setting.input == "self_caption":
                    cap = (captions or {}).get(item["item_id"])
                    if not cap:
                        skipped.append((item["item_id"], "caption_failed"))
                        break
                    v["caption"] = cap
                    ctx["caption"] = cap
                req = _req(rid, prompts[setting.prompt], v, [] if setting.input == "self_caption" else images, spec)
            elif benchmark == "maia":
                if item["task"] == "statement_verification":
                    req = _req(rid, prompts["maia_sv"], {"options": letter_options(opts, "dot")}, images, spec)
                else:
                    req = _req(rid, prompts["maia_oe"], {"question": item["question"]}, images, spec)
            elif benchmark == "hummus":
                if setting.input == "description":
                    if item["task"] == "image_box":   # the official monomodal tasks have no ImageBbox
                        skipped.append((item["item_id"], "no_text_only_image_box_task"))
                        break
                    desc = (descriptions or {}).get(item["item_id"])
                    if not desc:
                        skipped.append((item["item_id"], "no_image_description"))
                        break
                    req = _req(rid, prompts[setting.prompt], hummus_text_variables(item, desc), [], spec)
                    ctx["description"] = desc
                else:
                    req = _req(rid, prompts[setting.prompt], {"question": item["question"]}, images, spec)
            else:
                raise ValueError(f"unknown benchmark {benchmark}")
            rkind = "text" if ctx.get("answer_type") == "free_form" else kind
            out.append(EvalRequest(item=item, kind=rkind, options=opts, answer=str(answer), variant=k, request=req,
                                   n_images=len(req.images), context=ctx))
    return out, skipped


# ViMU official prompt per task (scripts/00-vimu_oe.py, 10-vimu_eg.py, 20-vimu_ss.py).
VIMU_PROMPTS = {"OE": "vimu_oe.yaml", "EG": "vimu_eg.yaml", "SS": "vimu_ss.yaml", "SS_guided": "vimu_ss_guided.yaml"}
VIMU_INSTRUCTION = "Select all correct options. Return only the option letters exactly as given. Do not add explanations."
VIMU_TASK_NAMES = {"RM": "rhetoric_mechanisms", "SV": "social_value_signals"}   # official keys not published


@lru_cache(maxsize=1)
def _vimu_taxonomy() -> Any:
    from forge.recipes.vimu.taxonomy import load_taxonomy

    return load_taxonomy()


def vimu_prompt(item: dict[str, Any], extra: dict[str, Any], variant: str) -> tuple[str, dict[str, str]]:
    """(prompt file, variables) of the official ViMU prompt for this item and setting variant."""
    task = item.get("category")
    transcript = str(extra.get("transcript") or "")
    if task == "OE":
        return VIMU_PROMPTS["OE"], {"question": item["question"], "transcript": transcript}
    opts = "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(as_list(item.get("options"))))
    v = {"question": item["question"], "transcript": transcript, "instruction": VIMU_INSTRUCTION, "options": opts}
    if task == "EG":
        return VIMU_PROMPTS["EG"], v
    v["task_name"] = VIMU_TASK_NAMES.get(task, str(task))
    if variant == "guided":
        axis = "rhetoric" if task == "RM" else "social_value"
        return VIMU_PROMPTS["SS_guided"], {**v, "guidance": _vimu_taxonomy().grouped_guidance(axis)}
    return VIMU_PROMPTS["SS"], v


# Hummus monomodal.py: Classification uses CLAS06, which only swaps the order of the two answers.
_CLAS02_TAIL, _CLAS06_TAIL = "Answer the question with Yes or No.", "Answer the question with No or Yes."


def hummus_text_variables(item: dict[str, Any], description: str) -> dict[str, str]:
    """The text-only ablation input of the official monomodal.py: instructions, blank line,
    "Image: <description>", "Caption: <caption>". Our items hold "Caption: ...\n\n<instructions>"."""
    caption_line, _, instructions = str(item["question"]).partition("\n\n")
    if not instructions:
        caption_line, instructions = "", caption_line
    if item.get("task") == "classification":
        instructions = instructions.replace(_CLAS02_TAIL, _CLAS06_TAIL)
    return {"instructions": instructions, "description": description, "caption_line": caption_line}


def iibench_shot_blocks(shots: list[dict[str, Any]]) -> str:
    """The dev examples of II-Bench's few-shot prompt, byte for byte as the official
    data_loader joins them: each "Question / Picture: <Picture k> / options / Answer: (X)"
    block ends with a newline and blocks are joined by one more newline (a blank line)."""
    return "\n".join(f"Question: {s['question']}\nPicture: <Picture {i}>\n{letter_options(as_list(s['options']))}\n"
                     f"Answer: ({s['answer']})\n" for i, s in enumerate(shots, start=1))


def pick_shots(item: dict[str, Any], pool: list[dict[str, Any]], k: int, seed: str) -> list[dict[str, Any]]:
    """``k`` dev examples in a seeded order, never from the query's own source image/video."""
    def key(d: dict[str, Any]) -> str:
        return hashlib.sha1(f"{seed}:{d['item_id']}".encode()).hexdigest()

    ordered = sorted(pool, key=key)
    src = item.get("source_item_id")
    return [d for d in ordered if d["item_id"] != item["item_id"] and (src is None or d.get("source_item_id") != src)][:k]


def caption_requests(items: list[dict[str, Any]], prompt: Any, spec: ModelSpec, data_dir: Path) -> list[LLMRequest]:
    """VAGUE SM step 1: the model's own caption of each item's image."""
    out = []
    for item in items:
        paths = as_list(item.get("media_paths"))
        if paths:
            out.append(_req(item["item_id"], prompt, {}, [ImageInput(path=data_dir / paths[0])], spec))
    return out


def parse_reply(er: EvalRequest, text: str | None, options: dict[str, Any] | None = None,
                benchmark: str | None = None) -> ex.Extraction:
    """The paper's own reading of a reply (``options``: the benchmark's scoring options,
    config/evals.yaml ``benchmarks.<paper>.scoring``)."""
    bench = benchmark or er.item.get("benchmark")
    if er.kind == "mcq" and bench == "iibench" and not (options or {}).get("iibench_strict_extraction"):
        return ex.extract_iibench(text, er.options or [])
    if er.kind == "multi" and bench == "vimu":
        keys = [chr(65 + i) for i in range(len(er.options or []))]
        return ex.extract_vimu_selection(text, keys, options=er.options,
                                         prose_fallback=bool((options or {}).get("vimu_lenient_parse")))
    if er.kind == "mcq" and bench == "vague":
        return ex.extract_vague(text, er.options or [])
    if er.kind == "mcq":
        return ex.extract_choice(text, er.options or [], multi=False)
    if er.kind == "yesno":
        return ex.extract_choice(text, er.options or ["Yes", "No"], multi=False)
    if er.kind == "multi":
        return ex.extract_choice(text, er.options or [], multi=True)
    if er.kind == "naming":
        return ex.extract_naming(text)
    if er.kind == "box":
        return ex.extract_box(text)
    if er.kind == "word":
        return ex.extract_word(text)
    if er.kind == "highlight":
        return ex.extract_highlight(text)
    return ex.extract_text(text, er.item.get("question", "") if er.item.get("benchmark") == "hummus" else "")


def prediction_rows(model: str, benchmark: str, setting: Setting, split_of: dict[str, str],
                    reqs: list[EvalRequest], results: list[LLMResult],
                    scoring: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per request: raw reply, parse, and the item score where no judge is needed."""
    rows = []
    for er, res in zip(reqs, results, strict=True):
        item = er.item
        raw = (res.data or {}).get("text") if res.ok else res.text
        row: dict[str, Any] = {
            "model": model, "benchmark": benchmark, "setting": setting.name, "item_id": item["item_id"],
            "variant": er.variant, "task": item["task"], "category": item.get("category"),
            "split": split_of.get(item["item_id"], "all"), "source_item_id": item.get("source_item_id"),
            "raw_reply": raw, "gold": er.answer, "n_images": er.n_images, "prompt_name": res.prompt_name,
            "prompt_hash": res.prompt_hash, "model_id": res.model, "backend": res.backend, "cached": bool(res.cached),
            "latency_s": float(res.latency_s), "tokens_in": int(res.tokens_in), "tokens_out": int(res.tokens_out),
            "parsed": None, "parse_ok": None, "parse_method": None, "status": "ok", "error": None,
            "correct": None, "score": None, "detail": {}, **{k: None for k in JUDGE_COLUMNS},
        }
        if er.context:
            row["detail"]["context"] = er.context
        if not res.ok:
            # The call itself failed (after retries): not the model's answer, so not scored.
            row.update(status="call_failed", error=f"{res.error_class}: {res.error}")
        else:
            e = parse_reply(er, raw, scoring, benchmark)
            row.update(parsed=e.answer or None, parse_ok=e.ok, parse_method=e.method or e.reason,
                       status="ok" if e.ok else "unparseable")
            if e.values:
                row["detail"]["parsed"] = e.values
            item_score(row, er, e)
        rows.append(row)
    return rows


JUDGE_COLUMNS = ("judge_ok", "judge_score", "judge_verdict", "judge_justification", "judge_json", "judge_model",
                 "judge_prompt_hash", "judge_error")


def item_score(row: dict[str, Any], er: EvalRequest, e: ex.Extraction) -> None:
    """Scores that need neither a judge nor an embedder."""
    if er.kind in ("mcq", "yesno"):
        gold = [er.answer.strip()]
        row["correct"] = bool(e.ok and list(e.letters) == gold)
        row["score"] = 1.0 if row["correct"] else 0.0
        if e.ok:
            types = as_list(er.item.get("option_types"))
            if types and er.variant == 0:
                row["detail"]["chosen_type"] = chosen_option_type(e.letters[0], types)
            elif types:
                opts0 = as_list(er.item.get("options"))
                chosen_text = (er.options or [])[ord(e.letters[0]) - 65]
                row["detail"]["chosen_type"] = types[opts0.index(chosen_text)] if chosen_text in opts0 else None
    elif er.kind == "multi":
        gold = [x.strip() for x in er.answer.split(",") if x.strip()]
        pred = list(e.letters) if e.ok else []       # an unreadable reply selects nothing (official)
        row["score"] = vimu_set_score(pred, gold)
        row["correct"] = bool(e.ok and set(pred) == set(gold))
        row["detail"]["composition"] = error_composition(pred, gold) if e.ok else "unparseable"
        row["detail"]["pred_set"], row["detail"]["gold_set"] = pred, gold
