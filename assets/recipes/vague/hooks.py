"""VAGUE's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from forge.benchmarks.hooks import PaperHooks

from .logic import evaluation, release, scoring


class VagueHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    parse_reply = staticmethod(evaluation.parse_reply)
    score_setting = staticmethod(scoring.score_setting)
    parse_release = staticmethod(release.parse_release)  # the published release (docs/releases.md)
