"""Hummus's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from forge.benchmarks.hooks import PaperHooks, by_name

from .logic import evaluation, gold, protocol, release, review, scoring


class HummusHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    parse_reply = staticmethod(evaluation.parse_reply)
    descriptions = staticmethod(evaluation.descriptions)
    score_setting = staticmethod(scoring.score_setting)
    score_structured = staticmethod(scoring.score_structured)
    parse_release = staticmethod(release.parse_release)  # the published release (docs/releases.md)
    gold_key = staticmethod(gold.match_key)
    follow_edit = staticmethod(review.follow_edit)
    recipe_drops = staticmethod(review.recipe_drops)

    # the human step (logic/protocol.py), by the step's name
    def step_task_data(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return by_name(protocol.TASK_DATA, step, "human step", self)(row)

    def step_llm_values(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return by_name(protocol.LLM_VALUES, step, "human step", self)(row)

    def prepare_step(self, step: str, rows: Any, read: Callable[[str], Any]) -> Any:
        return by_name(protocol.PREPARE, step, "human step", self)(rows, read)
