"""What an export's lmms-eval task folder runs (written by ``forge/export/lmms.py``).

The task's ``utils.py`` puts the project on ``sys.path`` and calls this module, so lmms-eval
renders each item with the project's own request builder (``build_requests``: the paper's
prompt, images and their order) and scores each reply with the project's own reading and
item scorer (``prediction_rows``: ``parse_reply`` + ``item_score``) and the paper's aggregate
(``score_benchmark``): nothing is copied or re-implemented, so lmms-eval's per-item scores are
``<paper>_eval``'s on the same replies. Open-ended items are judged by the benchmark's judge
prompt through the project's engine, at the endpoint lmms-eval's judge tasks read
(``OPENAI_API_URL`` / ``OPENAI_API_KEY``, model ``MODEL_VERSION``); without one they fail.
"""

from __future__ import annotations

import json
import math
import os
import sys
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, Setting, benchmark_block, settings_for
from forge.evals.pipeline import judge_rows, load_export, select_items
from forge.evals.scorers import weighted_mean
from forge.evals.scoring import Scorer, score_benchmark
from forge.llm.prompts import load_prompt
from forge.llm.types import LLMResult

# lmms-eval's OpenAI-compatible model answers a call that failed every retry with this text
# (lmms_eval/models/chat/openai.py): a failed call, not the model's answer.
LMMS_FAILED = "[LMMS_EVAL_REQUEST_FAILED"
MODEL = "lmms-eval"
CLOSED_KINDS = ("mcq", "yesno", "multi")
PAPER_LINE = "subtext-forge paper metric:"  # the stderr line of each task's aggregate


class JudgeMissing(RuntimeError):
    """An open-ended task ran without a judge endpoint: it fails instead of scoring 0."""


def judge_endpoint() -> tuple[str, str, str]:
    """(base URL, key, model) of the judge, from lmms-eval's judge variables."""
    url, key = os.environ.get("OPENAI_API_URL", ""), os.environ.get("OPENAI_API_KEY", "")
    if not url and not key:
        raise JudgeMissing(
            "this open-ended task needs a judge: set OPENAI_API_URL (an OpenAI-compatible base URL, "
            "e.g. https://api.openai.com/v1) and/or OPENAI_API_KEY, and MODEL_VERSION (the judge model, "
            "default gpt-4o), as lmms-eval's judge-based tasks read them; nothing is scored without one"
        )
    return url or "https://api.openai.com/v1", key, os.environ.get("MODEL_VERSION", "gpt-4o")


class ExportTask:
    """One export version of one benchmark, as the lmms-eval task sees it."""

    def __init__(self, export_dir: Path, spec: BenchmarkSpec, split: str = "test"):
        self.export_dir, self.spec, self.split = Path(export_dir).resolve(), spec, split
        pub = load_export(self.export_dir.parent.parent, self.spec, self.export_dir.name)
        self.items = pub.items.sort_values("item_id").reset_index(drop=True)
        self.cfg: dict[str, Any] = {"benchmarks": {}, "circular": False}  # the paper's settings
        self.block = benchmark_block(self.cfg, self.spec)
        self.scoring = dict(self.block.get("scoring") or {})
        self.settings = {s.name: s for s in settings_for(self.cfg, self.spec)}
        frames = max([s.frames for s in self.settings.values()] + [1])
        self.model = ModelSpec(name=MODEL, model=MODEL, accepts="frames", max_frames=frames, params={})
        eval_items, self.dev, _ = select_items(self.spec, self.items, None, split)
        self.records = eval_items.to_dict("records")
        self.by_id = {r["item_id"]: r for r in self.items.to_dict("records")}

    @cached_property
    def prompts(self) -> dict[str, Any]:
        names = {n for s in self.settings.values() for n in (s.prompt, s.caption_prompt) if n}
        names |= set((self.block.get("prompts") or {}).values())
        out = {n: load_prompt(self.spec.eval.prompts_dir / n) for n in sorted(names)}
        for task, fname in (self.block.get("prompts") or {}).items():
            out[f"task:{task}"] = out[fname]
        return out

    @cache  # noqa: B019 - one task object per export, kept for the run
    def requests(self, setting: str) -> dict[str, rq.EvalRequest]:
        s: Setting = self.settings[setting]
        reqs, _ = rq.build_requests(
            self.spec,
            s,
            self.records,
            self.prompts,
            self.model,
            self.export_dir,
            dev_items=self.dev.to_dict("records"),
        )
        return {r.item["item_id"]: r for r in reqs if r.variant == 0}

    def item_ids(self, setting: str, kinds: tuple[str, ...]) -> set[str]:
        """The items this setting evaluates whose reply kind is one of ``kinds``."""
        return {i for i, r in self.requests(setting).items() if r.kind in kinds}

    def messages(self, setting: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """lmms-eval chat messages of one item: the project's rendering, images in the paper's order."""
        er = self.requests(setting)[doc["item_id"]]
        req = er.request
        msgs = req.prompt.render(req.variables) + list(req.extra_messages)
        out = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in msgs]
        if req.images:
            images = [{"type": "image", "url": _image(i)} for i in req.images]
            last = max(i for i, m in enumerate(out) if m["role"] == "user")
            out[last]["content"] = images + out[last]["content"] if req.images_first else out[last]["content"] + images
        return out

    def text(self, setting: str, doc: dict[str, Any]) -> str:
        """The user turn's text (simple, text-only models): system and examples are in ``messages``."""
        return next(c["text"] for c in self.messages(setting, doc)[-1]["content"] if c["type"] == "text")

    def visuals(self, setting: str, doc: dict[str, Any]) -> list[Any]:
        return [_image(i) for i in self.requests(setting)[doc["item_id"]].request.images]

    def row(self, setting: str, doc: dict[str, Any], reply: str | None) -> dict[str, Any]:
        """The project's prediction row for this reply: parsed and scored by ``<paper>_eval``'s code."""
        er = self.requests(setting)[doc["item_id"]]
        failed = reply is not None and reply.startswith(LMMS_FAILED)
        res = LLMResult(
            item_id=er.request.item_id,
            ok=not failed,
            data=None if failed else {"text": reply or ""},
            text=reply,
            error=reply if failed else None,
            error_class="call_failed" if failed else None,
            prompt_name=er.request.prompt.name,
            prompt_hash=er.request.prompt.hash,
            model=MODEL,
            backend="lmms-eval",
            cached=False,
            attempts=1,
        )
        split_of = {doc["item_id"]: self.split}
        rows = rq.prediction_rows(MODEL, self.spec, self.settings[setting], split_of, [er], [res], self.scoring)
        if er.kind not in CLOSED_KINDS:
            self.judge(setting, rows)
        return _plain(rows[0])

    def judge(self, setting: str, rows: list[dict[str, Any]]) -> None:
        """The benchmark's judge over open-ended rows, at lmms-eval's judge endpoint."""
        from forge.llm.backends import OpenAIBackend
        from forge.llm.cache import LLMCache
        from forge.llm.engine import LLMEngine
        from forge.llm.settings import EngineSettings

        url, key, model = judge_endpoint()
        cache = Path(os.environ.get("SUBTEXT_LMMS_JUDGE_CACHE", self._cache_dir() / "judge_cache.sqlite"))
        engine = LLMEngine(OpenAIBackend(url, key or None), LLMCache(cache), EngineSettings(model=model))
        judge_model = ModelSpec(name=model, model=model, base_url=url)
        by_id = {r["item_id"]: self.by_id[r["item_id"]] for r in rows}
        judge_rows(self.spec, rows, by_id, engine, f"lmms__{setting}", judge_model, self.scoring)
        for r in rows:  # a failed verdict leaves the item unscored, as in `<paper>_eval` (never 0)
            if r.get("judge_ok") is False:
                print(f"{self.spec.name} {setting} {r['item_id']}: judge failed: {r['judge_error']}", file=sys.stderr)

    def _cache_dir(self) -> Path:
        d = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "subtext-forge-lmms"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def aggregate(self, setting: str, rows: list[dict[str, Any]]) -> float:
        """The paper's aggregate over the rows of one task (``score_benchmark``): the benchmark's
        primary metric where these rows give it (a closed-answer task of a benchmark whose primary
        metric needs its judged answers does not), else the first metric its scorer reports. Every
        metric is printed to stderr, one line."""
        if not rows:
            return float("nan")
        b = self.cfg.get("bootstrap") or {}
        sc = Scorer(int(b.get("n", 200)), int(b.get("seed", 0)), float(b.get("alpha", 0.05)))
        scores = score_benchmark(self.spec, pd.DataFrame(rows), self.items, sc, self.scoring)
        overall = {s["metric"]: float(s["value"]) for s in scores if s["slice"] == "all"}
        names = [m for m in overall if m != "success_rate"] or list(overall)
        name = self.spec.eval.primary_metric if self.spec.eval.primary_metric in overall else names[0]
        print(
            f"{PAPER_LINE} {self.spec.name} {setting}: {name} = {overall[name]!r}; all: {json.dumps(overall)}",
            file=sys.stderr,
            flush=True,
        )
        return overall[name]


def mean_score(values: list[Any]) -> float:
    """Mean of the scored items (``weighted_mean``: a failed call is unscored, as in ``<paper>_eval``)."""
    import numpy as np

    return weighted_mean(np.array([math.nan if v is None else float(v) for v in values], dtype=float))


def _image(img: Any) -> Any:
    if img.path is not None:
        return str(img.path)
    import io

    from PIL import Image

    return Image.open(io.BytesIO(img.data)).convert("RGB")


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row lmms-eval can log as JSON (NaN → None)."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
