"""Hummus's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from forge.benchmarks.hooks import PaperHooks

from .logic import evaluation, gold, release, review, scoring


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
