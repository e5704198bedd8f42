"""MAIA's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from forge.benchmarks.hooks import PaperHooks, by_name

from .logic import evaluation, gold, protocol, release, review, scoring, unimodal


class MaiaHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    # the official repository's reading of a reply (compute_mc_scores.py: the first standalone A/B)
    parse_reply = staticmethod(evaluation.parse_reply)
    score_setting = staticmethod(scoring.score_setting)
    judge_variables = staticmethod(evaluation.judge_variables)
    parse_release = staticmethod(release.parse_release)  # the published release (docs/releases.md)
    gold_key = staticmethod(gold.match_key)
    member_check = staticmethod(review.member_check)  # an edited pair passes the foil stage's own checks

    # the human step (logic/protocol.py), by the step's name; blind: no LLM answer (the shared
    # ``step_llm_values``)
    def step_task_data(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return by_name(protocol.TASK_DATA, step, "human step", self)(row)

    def prepare_step(self, step: str, rows: Any, read: Callable[[str], Any]) -> Any:
        return by_name(protocol.PREPARE, step, "human step", self)(rows, read)

    def step_controls(self, step: str, row: Mapping[str, Any]) -> dict[str, Any] | None:
        return by_name(protocol.CONTROL_UNITS, step, "human step", self)(row)

    def control_check(self, step: str, known: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
        return by_name(protocol.CONTROL_CHECK, step, "human step", self)(known, values)

    def control_judge(
        self, step: str, engine: Any, pairs: list[tuple[Mapping[str, Any], Mapping[str, Any]]]
    ) -> list[tuple[bool, str]]:
        return by_name(protocol.CONTROL_JUDGE, step, "human step", self)(engine, pairs)

    # §4.3 "Unimodal" (logic/unimodal.py), by the evaluation's name
    def extra_eval_configure(self, name: str, block: Mapping[str, Any]) -> Any:
        return by_name(unimodal.CONFIGURE, name, "extra evaluation", self)(block)

    def extra_eval_evaluate(
        self, name: str, spec: Any, items: Any, split: str, settings: Any, n_boot: int, seed: int
    ) -> tuple[Any, Any, Mapping[str, Any]]:
        return by_name(unimodal.EVALUATE, name, "extra evaluation", self)(spec, items, split, settings, n_boot, seed)
