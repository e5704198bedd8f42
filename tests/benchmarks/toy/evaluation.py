"""The toy benchmark's evaluation: one MCQ prompt, accuracy as the primary metric."""

from __future__ import annotations

import pandas as pd

from forge.evals.requests import RequestContext, letter_options
from forge.evals.scoring import Scorer
from forge.llm.types import LLMRequest


def build_request(c: RequestContext) -> LLMRequest:
    return c.request(
        c.prompts[c.setting.prompt], {"question": c.item["question"], "options": letter_options(c.options)}
    )


def score_setting(setting: str, g: pd.DataFrame, sc: Scorer, primary: str, options: dict | None = None) -> None:
    sc.mean(setting, primary, g, "score", primary=True)
    for cat, sub in g.groupby("category"):
        sc.mean(setting, primary, sub, "score", slice_=f"category={cat}")
