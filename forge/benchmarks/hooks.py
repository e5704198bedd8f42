"""A paper's behaviour, as one object: ``PaperHooks``.

A spec (``forge/benchmarks/spec.py``) holds declared values; what a paper *does* differently from
the shared stages (how it renders a request, reads a reply, scores a setting, judges an open
answer, matches its gold, imports its release, follows a reviewer's edit, checks an edited unit
member) is a method of one hooks object, ``BenchmarkSpec.hooks``. Each method here is the shared
behaviour, what a paper that does not override it gets; a paper subclasses this class in its
own package (``assets/recipes/<paper>/hooks.py``) and overrides what its paper does its own way,
delegating to its ``logic/`` modules. The shared stages call ``spec.hooks.<method>(...)`` and
never ask which paper it is. Dagster-free; imports nothing of a higher floor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# The hooks review applies to an edit: part of the review's code version (``review_hooks``).
REVIEW_HOOKS = ("follow_edit", "recipe_drops", "member_check")


class PaperHooks:
    """The shared behaviour; subclass it per paper and override what the paper does its own way.
    ``build_request`` and ``score_setting`` have no shared form: a benchmark that is evaluated
    overrides both."""

    def overrides(self, name: str) -> bool:
        """Whether this paper overrides hook ``name`` (a stage skips the work a default makes
        pointless: reading evidence for descriptions, waiting for predictions to draw figures)."""
        return getattr(type(self), name) is not getattr(PaperHooks, name)

    # -- evaluation: requests and replies (forge/evals/requests.py) ---------------------------------

    def build_request(self, ctx: Any) -> Any:
        """(``forge.evals.requests.RequestContext``) → the paper's request for one item × setting."""
        raise NotImplementedError(f"{type(self).__name__} renders no evaluation request (override build_request)")

    def parse_reply(self, er: Any, text: str | None, options: dict[str, Any]) -> Any:
        """(EvalRequest, reply text, scoring options) → the paper's own ``Extraction``; None: the
        generic reading of the reply's kind."""
        return None

    def descriptions(self, items: Any, evidence: Any) -> dict[str, str]:
        """A text stand-in for the image (a description-instead-of-image ablation): (items,
        evidence table) → item_id → text; {}: none (the stage reads no evidence unless overridden)."""
        return {}

    # -- evaluation: scoring (forge/evals/scoring.py) ---------------------------------------------

    def score_setting(self, setting: str, g: Any, sc: Any, primary: str, options: dict[str, Any]) -> None:
        """(setting, its item scores, the rows so far, primary metric, scoring options) → adds the
        aggregate rows of one setting (the paper's rules with every scoring option off)."""
        raise NotImplementedError(f"{type(self).__name__} scores no setting (override score_setting)")

    def score_structured(
        self, row: dict[str, Any], item: dict[str, Any], refs: list[str], thresholds: dict[str, float]
    ) -> list[str] | None:
        """Scores a parsed reply of a structured task in place: → the references to embed the
        reply against (similarity-scored tasks), or None (nothing to embed)."""
        return None

    def judge_variables(self, row: dict[str, Any], item: dict[str, Any]) -> dict[str, str] | None:
        """(prediction row, item) → the judge prompt's variables; None: the shared ones (question,
        answer, numbered references: ``forge.evals.scoring.reference_variables``)."""
        return None

    def read_judgement(self, row: dict[str, Any], data: dict[str, Any], options: dict[str, Any]) -> None:
        """Fills the row's judge and score columns from the judge's JSON; raises ValueError on a
        judgement it cannot use (the row then stays unscored). Shared: ``label`` correct /
        incorrect is the score (1 / 0)."""
        label = str(data.get("label", "")).strip().lower()
        if label not in ("correct", "incorrect"):
            raise ValueError(f"judge label {data.get('label')!r}")
        ok = label == "correct"
        row.update(judge_ok=True, judge_score=float(ok), score=float(ok), correct=ok, judge_verdict=data.get("label"))

    def judge_failed_call(self, row: dict[str, Any]) -> None:
        """The verdict of an open-ended reply whose call failed, without a judge call; shared:
        none (the row stays unscored)."""
        return None

    # -- evaluation: reports (assets/evals) ---------------------------------------------------------

    def report_plots(self, scores: Any, preds: Any, out_dir: Path) -> list[Path]:
        """(scores, predictions, dir) → the paper's own plots; shared: none."""
        return []

    def report_prediction_tables(self, scores: Any, preds: Any) -> Mapping[str, Any]:
        """Tables that need the predictions: (scores, predictions) → metadata name → DataFrame."""
        return {}

    def paper_figures(self, preds: Any, out_dir: Path) -> tuple[str, list[Path]] | None:
        """The paper report's figures drawn from the predictions: (eval_predictions rows, out dir)
        → (Markdown, PNG paths); None: the report draws the published tables' figures only."""
        return None

    # -- releases and gold (forge/releases, forge/gold) ------------------------------------------

    def parse_release(self, info: Any) -> Any:
        """The published-release importer: release → ``ParsedRelease`` (a paper without one has no
        release assets: ``forge.releases.config`` asks ``overrides("parse_release")``)."""
        raise NotImplementedError(f"{type(self).__name__} imports no release (override parse_release)")

    def gold_key(self, row: dict[str, Any]) -> tuple[str, str] | None:
        """Pairs a built item with an imported one (``BenchmarkSpec.gold``): (text key, task key),
        or None. The source file of a paper's override is part of the gold step's version."""
        return None

    # -- human review (forge/review) ----------------------------------------------------------------

    def follow_edit(self, original: dict[str, Any], edited: dict[str, Any]) -> dict[str, Any]:
        """The edited item with the fields the recipe derives from the edited one; shared: as edited."""
        return edited

    def recipe_drops(self, items: Any) -> dict[str, tuple[str, str]]:
        """(current items) → {item: (why, the item that decided it)} for items the recipe would no
        longer build from the current revisions; shared: none."""
        return {}

    def member_check(
        self, new: dict[str, Any], old: dict[str, Any], others: list[dict[str, Any]], checks: Any
    ) -> str | None:
        """The stage's own checks of an edited unit member: (edited item, original, the unit's other
        items, ``EditChecks``) → why the edit is refused, or None; shared: no further check."""
        return None


def review_hooks(hooks: PaperHooks) -> dict[str, Callable[..., Any] | None]:
    """The paper's own review hooks by name (None where it keeps the shared behaviour): hashed with
    the review settings into the review's code version, so an edit of the paper's review logic
    makes a new version (the same parts as when they were fields of ``ReviewSpec``)."""
    return {name: getattr(hooks, name) if hooks.overrides(name) else None for name in REVIEW_HOOKS}
