"""A paper's behaviour, as one object: ``PaperHooks``.

A spec (``forge/benchmarks/spec.py``) holds declared values; what a paper *does* differently from
the shared stages (how it renders a request, reads a reply, scores a setting, judges an open
answer, matches its gold, imports its release, follows a reviewer's edit, checks an edited unit
member, shows a human step's form and judges its control answers, runs an evaluation beside the
models) is a method of one hooks object, ``BenchmarkSpec.hooks``; a method about one of the
paper's declared human steps or extra evaluations takes its name first (``by_name`` dispatches).
Each method here is the shared behaviour, what a paper that does not override it gets; a paper
subclasses this class in its own package (``assets/recipes/<paper>/hooks.py``) and overrides what
its paper does its own way, delegating to its ``logic/`` modules. The shared stages call
``spec.hooks.<method>(...)`` and never ask which paper it is. Dagster-free; imports nothing of a higher floor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# The hooks review applies to an edit: part of the review's code version (``review_hooks``).
REVIEW_HOOKS = ("follow_edit", "recipe_drops", "member_check")
# The hooks about one of the paper's declared human steps (``HumanStep.name``) or extra evaluations
# (``ExtraEval.name``): called with that name first; a paper's override dispatches on it (``by_name``).
NAMED_HOOKS = (
    "step_task_data",
    "step_llm_values",
    "step_controls",
    "prepare_step",
    "control_check",
    "control_judge",
    "extra_eval_configure",
    "extra_eval_evaluate",
)


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

    # -- human protocol steps (forge/protocol; ``BenchmarkSpec.human_steps``, by the step's name) ---

    def step_task_data(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """(step name, a row of the corrected stage) → what the step's form shows (keys of its
        ``display``; media paths relative to the data dir). A paper with human steps overrides it."""
        raise NotImplementedError(f"{type(self).__name__} has no human step {step!r} (override step_task_data)")

    def step_llm_values(self, step: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """(step name, row) → the LLM's answer as field → value (the prediction; the fallback);
        shared: none (people write their own answer, nothing to show or fall back on)."""
        return {}

    def step_controls(self, step: str, row: Mapping[str, Any]) -> dict[str, Any] | None:
        """(step name, row) → field → the known answer when the unit is a control question, else
        None; shared: no unit is a control."""
        return None

    def prepare_step(self, step: str, rows: Any, read: Callable[[str], Any]) -> Any:
        """(step name, the corrected stage's rows with the step's joins, read(table) → rows) → the
        rows the form is made of, for what a join cannot say; shared: the rows as they are."""
        return rows

    def control_check(self, step: str, known: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
        """(step name, known answer, the person's values) → right? The offline rule of a step's
        control questions; shared: every known field's value equals the person's."""
        return all(values.get(k) == x for k, x in known.items())

    def control_judge(
        self, step: str, engine: Any, pairs: list[tuple[Mapping[str, Any], Mapping[str, Any]]]
    ) -> list[tuple[bool, str]]:
        """(step name, LLM engine or None, [(known, values)]) → one (right, judged_by) per pair: the
        benchmark's judge of a step whose ``Control.judged`` is set; shared: ``control_check``."""
        return [(bool(self.control_check(step, k, v)), "rule") for k, v in pairs]

    # -- evaluations beside the configured models (``EvalSpec.extra_evals``, by the eval's name) ----

    def extra_eval_configure(self, name: str, block: Mapping[str, Any]) -> Any:
        """(extra evaluation's name, the benchmark's config/evals.yaml block) → its settings, or
        None: not configured, nothing runs. A paper that declares an extra evaluation overrides it."""
        raise NotImplementedError(
            f"{type(self).__name__} has no extra evaluation {name!r} (override extra_eval_configure)"
        )

    def extra_eval_evaluate(
        self, name: str, spec: Any, items: Any, split: str, settings: Any, n_boot: int, seed: int
    ) -> tuple[Any, Any, Mapping[str, Any]]:
        """(name, spec, evaluated items, split, its settings, bootstrap n, seed) → (eval_predictions
        rows, eval_scores rows, metadata figures). A paper that declares one overrides it."""
        raise NotImplementedError(
            f"{type(self).__name__} has no extra evaluation {name!r} (override extra_eval_evaluate)"
        )


def by_name(table: Mapping[str, T], name: str, what: str, owner: PaperHooks) -> T:
    """A paper's hook for one named step or evaluation (``table``: name → its ``logic/`` function);
    a name the paper does not declare is a clear error, never another step's behaviour."""
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"{type(owner).__name__}: no {what} {name!r} (known: {sorted(table)})") from None


def review_hooks(hooks: PaperHooks) -> dict[str, Callable[..., Any] | None]:
    """The paper's own review hooks by name (None where it keeps the shared behaviour): hashed with
    the review settings into the review's code version, so an edit of the paper's review logic
    makes a new version (the same parts as when they were fields of ``ReviewSpec``)."""
    return {name: getattr(hooks, name) if hooks.overrides(name) else None for name in REVIEW_HOOKS}
