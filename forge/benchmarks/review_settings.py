"""Review settings: the benchmark's declaration overlaid with ``config/review.yaml`` (profile
and per-benchmark blocks) and the environment. Dagster-free. Resolved once per benchmark by
``forge.splits.config.stage_settings`` (``StageSettings.review``), which the asset factories, the
people sensor's tick and a regenerating recipe stage call and pass down whole. The server's
address and credentials (the same file's ``server`` block) are ``forge/people/config.py``'s.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from forge.benchmarks.review_spec import ReviewPolicy, ReviewSpec
from forge.benchmarks.settings import active_profile, merge
from forge.people.config import load_doc

POLICY_ENV = "SUBTEXT_REVIEW_POLICY"


def review_spec(name: str, declared: ReviewSpec, profile: str | None = None, path: Path | None = None) -> ReviewSpec:
    """The review settings in effect for benchmark ``name``: the declaration, then the active
    profile's block (``profiles.<profile>``, e.g. the demo's ``advisory``), then the file's top-level
    ``defaults`` and ``benchmarks.<name>``, then ``SUBTEXT_REVIEW_POLICY``. The top level is the
    user's own setting and holds under every profile: ``policy: required`` under ``defaults:``
    switches the demo too. A profile the file does not name adds nothing."""
    doc = load_doc(path)
    named = (doc.get("profiles") or {}).get(active_profile(name, profile)) or {}
    block: dict[str, Any] = {}
    for layer in (named, doc):  # the profile's defaults first, the user's top level over them
        block = merge(block, merge(layer.get("defaults") or {}, (layer.get("benchmarks") or {}).get(name) or {}))
    env = os.environ.get(POLICY_ENV, "").strip()
    if env:
        block["policy"] = env
    changes: dict[str, Any] = {}
    if "policy" in block:
        if block["policy"] is False:  # YAML reads a bare `off` as false
            block["policy"] = ReviewPolicy.OFF
        try:
            changes["policy"] = ReviewPolicy(str(block["policy"]))
        except ValueError:
            raise ValueError(
                f"review policy {block['policy']!r} for {name}: use one of {[p.value for p in ReviewPolicy]}"
            ) from None
    if "reviewers" in block:
        changes["reviewers"] = int(block["reviewers"])
    if "splits" in block:
        changes["splits"] = tuple(str(s) for s in block["splits"] or ())
    if "human_answers" in block:
        changes["human_answers"] = int(block["human_answers"])
    if "export_after_review" in block:
        changes["export_after_review"] = bool(block["export_after_review"])
    return dataclasses.replace(declared, **changes)
