"""II-Bench's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forge.benchmarks.hooks import PaperHooks, by_name

from .logic import evaluation, protocol, release, scoring


class IIBenchHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    parse_reply = staticmethod(evaluation.parse_reply)
    score_setting = staticmethod(scoring.score_setting)
    parse_release = staticmethod(release.parse_release)  # the published release (docs/releases.md)

    # the human steps (logic/protocol.py), by the step's name
    def step_task_data(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return by_name(protocol.TASK_DATA, step, "human step", self)(row)

    def step_llm_values(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return by_name(protocol.LLM_VALUES, step, "human step", self)(row)
