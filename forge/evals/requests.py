"""Turn benchmark items into model requests for one setting, and replies into predictions.

``build_requests`` renders each item for a setting (images attached per the setting's
input), ``predictions`` parses the replies with ``forge.evals.extract`` and scores what
can be scored per item without a judge or an embedder (``forge.evals.scoring`` does the rest).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from forge.benchmarks.spec import BenchmarkSpec, ImagePlacement
from forge.evals import extract as ex
from forge.evals.config import ModelSpec, Setting
from forge.evals.scorers import chosen_option_type, error_composition, partial_set_score, rotations
from forge.items.cells import as_list, as_object
from forge.llm.types import ImageInput, LLMRequest, LLMResult


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


def images_for(item: dict[str, Any], setting: Setting, model: ModelSpec, data_dir: Path) -> list[ImageInput]:
    paths = as_list(item.get("media_paths"))
    n = setting.n_frames(model)
    if setting.input in ("none", "description") or n == 0:
        return []
    if setting.input == "black":
        return [ImageInput(data=black_jpeg()) for _ in range(n)]
    if setting.input in ("first_frame", "image", "self_caption"):
        chosen = paths[:1]
    else:
        chosen = uniform(paths, n)
    return [ImageInput(path=data_dir / p) for p in chosen]


def _req(
    item_id: str, prompt: Any, variables: dict[str, Any], images: list[ImageInput], model: ModelSpec
) -> LLMRequest:
    return LLMRequest(item_id=item_id, prompt=prompt, variables=variables, images=images, params=dict(model.params))


def request_id(item_id: str, variant: int) -> str:
    return item_id if variant == 0 else f"{item_id}#r{variant}"


class SkipItem(Exception):
    """Raised by a benchmark's request builder: the item is left out of this setting (reason)."""


@dataclass
class RequestContext:
    """What a benchmark's ``build_request`` gets for one item × setting × option variant."""

    item: dict[str, Any]
    setting: Setting
    options: list[str] | None
    answer: str
    request_id: str
    images: list[ImageInput]
    prompts: dict[str, Any]
    model: ModelSpec
    data_dir: Path
    dev_items: list[dict[str, Any]]
    descriptions: dict[str, str]
    captions: dict[str, str]
    seed: str
    extra: dict[str, Any]
    labels: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)  # stored with the prediction (detail.context)

    def request(self, prompt: Any, variables: dict[str, Any], images: list[ImageInput] | None = None) -> LLMRequest:
        return _req(self.request_id, prompt, variables, self.images if images is None else images, self.model)


def build_requests(
    spec: BenchmarkSpec,
    setting: Setting,
    items: list[dict[str, Any]],
    prompts: dict[str, Any],
    model: ModelSpec,
    data_dir: Path,
    *,
    circular: bool = False,
    dev_items: list[dict[str, Any]] | None = None,
    descriptions: dict[str, str] | None = None,
    captions: dict[str, str] | None = None,
    seed: str = "eval",
) -> tuple[list[EvalRequest], list[tuple[str, str]]]:
    """Requests for every applicable item, and ``(item_id, reason)`` for items left out.

    ``spec``: the benchmark; its ``eval.kinds`` says how each task's reply is parsed and its
    ``hooks.build_request`` renders the prompt. ``model``: the model under test."""
    out: list[EvalRequest] = []
    skipped: list[tuple[str, str]] = []
    for item in items:
        kind = spec.eval.kinds.get(item["task"])
        if kind is None:
            skipped.append((item["item_id"], f"task_not_evaluated:{item['task']}"))
            continue
        extra, labels = as_object(item.get("extra")), as_object(item.get("labels"))
        if setting.tasks and item.get("category") not in setting.tasks:
            continue  # a setting limited to some task categories (e.g. a guided prompt)
        options = as_list(item.get("options")) or None
        variants = [(options, item["answer"])]
        # circular evaluation rotates lettered options; a free-form setting shows none
        if circular and kind == "mcq" and spec.eval.circular and options and setting.variant != "free_form":
            variants = rotations(options, item["answer"])
        images = images_for(item, setting, model, data_dir)
        if setting.input in ("frames", "first_frame", "image", "self_caption") and not images:
            skipped.append((item["item_id"], "no_media"))
            continue
        for k, (opts, answer) in enumerate(variants):
            ctx = RequestContext(
                item=item,
                setting=setting,
                options=opts,
                answer=str(answer),
                request_id=request_id(item["item_id"], k),
                images=images,
                prompts=prompts,
                model=model,
                data_dir=data_dir,
                dev_items=dev_items or [],
                descriptions=descriptions or {},
                captions=captions or {},
                seed=seed,
                extra=extra,
                labels=labels,
            )
            try:
                req = spec.hooks.build_request(ctx)
            except SkipItem as exc:
                skipped.append((item["item_id"], str(exc)))
                break
            order = spec.eval.order_for(setting.name)  # the paper's official order of parts
            req.images_first = bool(req.images) and order is not None and order.images == ImagePlacement.BEFORE_TEXT
            # a setting that asks for words instead of a letter (ctx.context["answer_type"]) is read as text
            rkind = "text" if ctx.context.get("answer_type") == "free_form" else kind
            out.append(
                EvalRequest(
                    item=item,
                    kind=rkind,
                    options=opts,
                    answer=str(answer),
                    variant=k,
                    request=req,
                    n_images=len(req.images),
                    context=ctx.context,
                )
            )
    return out, skipped


def pick_shots(item: dict[str, Any], pool: list[dict[str, Any]], k: int, seed: str) -> list[dict[str, Any]]:
    """``k`` dev examples in a seeded order, never from the query's own source image/video."""

    def key(d: dict[str, Any]) -> str:
        return hashlib.sha1(f"{seed}:{d['item_id']}".encode()).hexdigest()

    ordered = sorted(pool, key=key)
    src = item.get("source_item_id")
    return [d for d in ordered if d["item_id"] != item["item_id"] and (src is None or d.get("source_item_id") != src)][
        :k
    ]


def caption_requests(items: list[dict[str, Any]], prompt: Any, model: ModelSpec, data_dir: Path) -> list[LLMRequest]:
    """Self-caption settings, step 1: the model's own caption of each item's image."""
    out = []
    for item in items:
        paths = as_list(item.get("media_paths"))
        if paths:
            out.append(_req(item["item_id"], prompt, {}, [ImageInput(path=data_dir / paths[0])], model))
    return out


def parse_reply(
    er: EvalRequest, text: str | None, options: dict[str, Any] | None = None, spec: BenchmarkSpec | None = None
) -> ex.Extraction:
    """The paper's own reading of a reply: the benchmark's ``hooks.parse_reply`` first
    (``options``: its scoring options, config/evals.yaml ``benchmarks.<name>.scoring``), then
    the generic reading of the reply kind. Without a ``spec`` only the generic kinds apply."""
    if spec is not None:
        e = spec.hooks.parse_reply(er, text, dict(options or {}))
        if e is not None:
            return e
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
    if er.kind == "text_not_question":  # an echo of the question is no answer
        return ex.extract_text(text, er.item.get("question", ""))
    return ex.extract_text(text, "")


def prediction_rows(
    model: str,
    spec: BenchmarkSpec,
    setting: Setting,
    split_of: dict[str, str],
    reqs: list[EvalRequest],
    results: list[LLMResult],
    scoring: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One row per request: raw reply, parse, and the item score where no judge is needed.
    ``model``: the model's name; ``spec``: the benchmark; ``scoring``: its scoring options."""
    rows = []
    for er, res in zip(reqs, results, strict=True):
        item = er.item
        raw = (res.data or {}).get("text") if res.ok else res.text
        row: dict[str, Any] = {
            "model": model,
            "benchmark": spec.name,
            "setting": setting.name,
            "item_id": item["item_id"],
            "variant": er.variant,
            "task": item["task"],
            "category": item.get("category"),
            "split": split_of.get(item["item_id"], "all"),
            "source_item_id": item.get("source_item_id"),
            "raw_reply": raw,
            "gold": er.answer,
            "n_images": er.n_images,
            "prompt_name": res.prompt_name,
            "prompt_hash": res.prompt_hash,
            "model_id": res.model,
            "backend": res.backend,
            "cached": bool(res.cached),
            "latency_s": float(res.latency_s),
            "tokens_in": int(res.tokens_in),
            "tokens_out": int(res.tokens_out),
            "parsed": None,
            "parse_ok": None,
            "parse_method": None,
            "status": "ok",
            "error": None,
            "correct": None,
            "score": None,
            "detail": {},
            **{k: None for k in JUDGE_COLUMNS},
        }
        if er.context:
            row["detail"]["context"] = er.context
        if not res.ok:
            # The call itself failed (after retries): not the model's answer, so not scored.
            row.update(status="call_failed", error=f"{res.error_class}: {res.error}")
        else:
            e = parse_reply(er, raw, scoring, spec)
            row.update(
                parsed=e.answer or None,
                parse_ok=e.ok,
                parse_method=e.method or e.reason,
                status="ok" if e.ok else "unparseable",
            )
            if e.values:
                row["detail"]["parsed"] = e.values
            item_score(row, er, e)
        rows.append(row)
    return rows


JUDGE_COLUMNS = (
    "judge_ok",
    "judge_score",
    "judge_verdict",
    "judge_justification",
    "judge_json",
    "judge_model",
    "judge_prompt_hash",
    "judge_error",
)


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
        pred = list(e.letters) if e.ok else []  # an unreadable reply selects nothing (official)
        row["score"] = partial_set_score(pred, gold)
        row["correct"] = bool(e.ok and set(pred) == set(gold))
        row["detail"]["composition"] = error_composition(pred, gold) if e.ok else "unparseable"
        row["detail"]["pred_set"], row["detail"]["gold_set"] = pred, gold
