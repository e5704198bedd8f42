"""What a benchmark (one paper) declares so that the shared stages never name it.

A ``BenchmarkSpec`` is plain data plus one hooks object (``forge/benchmarks/hooks.py``: the
paper's behaviour, one method each). The shared stages read it:

* splits (``forge/splits``): the split policy (sizes, the unit a split and a gate never cut);
* gates: the option policy (may correct-option positions be re-balanced?) and the blind
  (text-only) filter policy (drop / report / off, per item or per pool, trial budget);
* exports: card sections and the recipe config shown on the card;
* evaluations (``forge/evals``): settings, reply kinds per task, the request builder, the
  setting scorer, the primary metric, judge / similarity needs, report slices and plots, the
  evaluations beside the models (a paper's own baseline) and the paper report's figures;
* the Dagster layer: group, owners, the recipe asset that writes the items table.
* human review (``forge/review``): what a reviewer sees and answers, how many reviewers, which
  splits, and whether review gates the export (``ReviewSpec``).

Every policy choice cites the paper section it follows in the spec's own docstring
(``assets/recipes/<paper>/spec.py``). Dagster-free: nothing here imports ``dagster``.

A paper is one package (docs/conventions.md): its spec is made by ``BenchmarkSpec.of_package``
(``package=__package__``), which names the package's own files before the spec exists (a spec is
frozen, declared values only, and reads no file when made), so a copy of the folder under a new name is a new benchmark:
``config.yaml`` (recipe settings), ``contracts/`` (its tables' contracts), ``evals.yaml`` and
``eval_prompts/`` (evaluation settings and prompts), ``README.md`` (its doc), ``definitions.py``
(its Dagster ``defs``).
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.protocol_spec import HumanStep
from forge.benchmarks.review_spec import ReviewSpec

ROOT = Path(__file__).resolve().parents[2]


# How a declared reject reason is made to happen (``BenchmarkSpec.rejects``): the whole demo run over
# HTTP provokes it (tests/e2e/test_nonstub.py), or no test does yet; else a test file that names it.
E2E = "e2e"
UNTESTED = "untested"


class OptionPolicy(enum.StrEnum):
    """May the gate move the correct option to balance letter positions?"""

    BALANCE = "balance"  # options are an unordered set: re-shuffling them is harmless
    FIXED = "fixed"  # the letter order carries meaning (a taxonomy A–E, Yes/No): never move


class BlindAction(enum.StrEnum):
    """What the blind (text-only) solvability test does with a flagged unit."""

    DROP = "drop"  # flagged units are removed before export
    REPORT = "report"  # flagged units are kept; the figures are a unimodal baseline
    OFF = "off"  # no blind test (no LLM calls)


class BlindUnit(enum.StrEnum):
    """What one blind verdict is about."""

    ITEM = "item"  # each multiple-choice item on its own (a statement pair is one item)
    POOL = "pool"  # items sharing ``unit_key``: a trial counts only if every item is right


@dataclass(frozen=True)
class BlindPolicy:
    """Paper defaults of the blind filter; ``config/splits.yaml`` ``blind:`` may override
    ``action`` and ``trials`` (a documented deviation), never the unit."""

    action: BlindAction = BlindAction.REPORT  # no paper filters on a text-only model; drop is opt-in
    unit: BlindUnit = BlindUnit.ITEM  # what one verdict is about; the paper's, no config changes it
    trials: int | None = None  # None: the ``config/splits.yaml`` default


@dataclass(frozen=True)
class SplitPolicy:
    """How items are split and which group of items gates and splits keep whole.

    ``unit_key`` names a key of the item's ``labels`` JSON whose value ties items together
    (e.g. ``question_id``: a pool of statement pairs and its open question). A gate that drops
    one member drops the whole unit, and the blind test of a ``POOL`` unit judges the unit.
    Leakage grouping (source item, channel, near-duplicate) always applies on top.
    ``sizes``: the paper's split sizes (None: ``config/splits.yaml`` defaults apply).
    """

    sizes: Mapping[str, int | float | str] | None = None  # the paper's split sizes; None: config/splits.yaml
    unit_key: str | None = None  # a ``labels`` key whose items are kept whole (MAIA: ``question_id``)


class TextReference(enum.StrEnum):
    """What a free-text reply is compared with by the reference-overlap metrics."""

    REFERENCES = "references"  # the item's ``references`` (a pool of reference answers)
    CORRECT_OPTION = "correct_option"  # the text of the gold option (a free-form run of a choice item)


class ImagePlacement(enum.StrEnum):
    """Where a request's image parts go in its user turn, relative to the text."""

    BEFORE_TEXT = "before_text"
    AFTER_TEXT = "after_text"


@dataclass(frozen=True)
class PartOrder:
    """The order of image and text parts as the paper's official script sends them, and the
    file (and function) it is read from (docs/evals.md "Order of parts")."""

    images: ImagePlacement  # where the image parts go, relative to the text
    source: str  # the official file (and function) the order is read from


@dataclass(frozen=True)
class ExtraEval:
    """An evaluation the paper reports beside the models of config/models.yaml (e.g. a baseline
    that is no chat model). The shared factory (assets/evals/baselines.py) makes one asset
    ``<paper>_<name>`` after ``<paper>_export`` for each: it reads the benchmark's
    config/evals.yaml block (the paper's ``hooks.extra_eval_configure(name, block)``: its settings,
    or None when not configured), loads the evaluated export's items, and writes the rows the
    paper's ``hooks.extra_eval_evaluate(name, ...)`` returns to ``eval_predictions`` /
    ``eval_scores`` (part ``<model>__<paper>``); the paper report runs after it and knows its
    ``settings``."""

    name: str  # asset ``<paper>_<name>``
    model: str  # its model on the leaderboard
    settings: tuple[str, ...]  # the settings its rows carry
    code_version: str  # the asset's code version
    description: str  # the asset's description
    how_to_configure: str  # the message when ``hooks.extra_eval_configure`` returns None (logged, in metadata)


@dataclass(frozen=True)
class EvalSpec:
    """How the evaluation stage runs and scores this benchmark.

    ``kinds``: task → how a reply is parsed (``mcq``, ``multi``, ``yesno``, ``text``, ...;
    see ``forge.evals.requests.parse_reply``). How a request is rendered, a reply read and a
    setting scored is the paper's behaviour, ``BenchmarkSpec.hooks`` (``build_request``,
    ``parse_reply``, ``score_setting``: ``options`` are the benchmark's named scoring options,
    config/evals.yaml ``benchmarks.<name>.scoring``; all off = the paper's rules).
    ``defaults``: the ``config/evals.yaml`` block used when that file has none for this
    benchmark (the file wins key by key). ``prompts_dir``: where setting prompt files live.
    Both default to the paper package's ``evals.yaml`` and ``eval_prompts/`` (``BenchmarkSpec.package``).

    Open-ended judging (``judge_prompt`` set; rows of task ``open_ended``): by default a reply
    that could not be read scores 0 without a judge, a parsed answer is judged with the
    variables ``question`` / ``answer`` / ``references`` and the judge's ``label`` (correct /
    incorrect) is the score, and a failed call stays unscored. ``judge_unparseable`` and the
    hooks ``judge_variables``, ``read_judgement`` and ``judge_failed_call`` replace those steps.
    """

    kinds: Mapping[str, str]  # task → how a reply is parsed (mcq, multi, yesno, text, ...)
    primary_metric: str  # the leaderboard's metric
    prompts_dir: Path | None = None  # None: the package's eval_prompts/
    # settings when config/evals.yaml has none (the file wins key by key); {}: those of ``defaults_file``
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # the file that holds them when none are declared (the package's evals.yaml, named by of_package;
    # read where they are used, forge.benchmarks.settings.eval_defaults, never by the spec)
    defaults_file: Path | None = None
    judge_prompt: str | None = None  # open-ended answers judged by the `llm` resource's model
    similarity: bool = False  # needs the embedder (similarity / overlap scores)
    text_metrics: bool = False  # reference-overlap metrics of text replies (no embedder needed)
    text_reference: TextReference = TextReference.REFERENCES  # what those metrics compare a reply with
    judge_unparseable: bool = False  # an empty / unreadable reply is judged too (its raw text), not scored 0
    # Similarity-scored specs: an unreadable reply counts as wrong (score 0) instead of unscored.
    unparseable_is_wrong: bool = False
    # Similarity-scored specs: the embedding similarity is the reply's score, correct at
    # ``thresholds[task]`` (default 0.6); off: it is recorded in ``detail`` only.
    similarity_is_score: bool = False
    circular: bool = False  # letters carry no meaning: circular evaluation allowed
    report_slices: tuple[tuple[str, str], ...] = ()  # (metric, labels key) bar plots
    # ``labels`` keys whose value is a list of every slice the item belongs to (a list, or one
    # string): the item counts in each, as the paper's tables count it. Every other labels key
    # a slice reads holds one value; a list there is an error (forge/evals/scoring.py label_slices).
    multi_label: tuple[str, ...] = ()
    # setting → order of image and text parts (key ``*``: every setting not named); empty: the
    # images after the text. Read by forge/evals/requests.py build_requests (``order_for``).
    part_order: Mapping[str, PartOrder] = field(default_factory=dict)
    report_tables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # metadata name → metrics
    # Evaluations beside the configured models (``ExtraEval``): each its own asset, before the paper report.
    extra_evals: tuple[ExtraEval, ...] = ()

    def order_for(self, setting: str) -> PartOrder | None:
        """The declared order of parts of ``setting`` (None: none declared, images after the text)."""
        return self.part_order.get(setting) or self.part_order.get("*")


@dataclass(frozen=True)
class GoldRules:
    """How an imported release's human gold replaces LLM-made fields of built items (the explicit,
    versioned gold step, forge/gold/apply.py; switched on in config/releases.yaml ``gold:``).

    The paper's ``hooks.gold_key(row)`` pairs a built item with an imported one: (text key, task
    key) or None; the source file of that method is part of the step's version. ``fields``: gold field → the tasks whose answer columns it replaces. ``labels_keys``: gold field
    → ``labels`` keys copied with it. ``extra_keys``: gold field → ``extra`` keys copied from any
    imported row with the same text key (whatever its task). ``default_fields``: the fields a bare
    ``enabled: true`` switches on."""

    fields: Mapping[str, tuple[str, ...]]  # gold field → the tasks whose answer columns it replaces
    default_fields: tuple[str, ...] = ()  # the fields a bare ``enabled: true`` switches on
    labels_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # gold field → labels keys copied
    # gold field → ``extra`` keys copied from any imported row with the same text key
    extra_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class PaperCard:
    """What the dataset card says of the paper: its BibTeX, what the benchmark measures, and the
    limitations of this rebuild (forge/export/hub.py, forge/export/card.py)."""

    citation: str  # BibTeX
    measures: str  # what the benchmark measures
    limitations: str  # the limitations of this rebuild


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark = one spec. See the module docstring for who reads what."""

    name: str  # table / asset prefix and partition file name
    title: str  # the paper's name, for cards and docs
    group: str  # Dagster group of its recipe assets
    recipe_assets: tuple[str, ...]  # its recipe assets, last one writes ``items_table``
    eval: EvalSpec  # how the evaluation stage runs and scores it
    options: OptionPolicy = OptionPolicy.BALANCE  # may the gate move the correct option?
    blind: BlindPolicy = field(default_factory=BlindPolicy)  # the text-only probe
    split: SplitPolicy = field(default_factory=SplitPolicy)  # split sizes and the unit kept whole
    owners: tuple[str, ...] = ("team:recipes",)  # Dagster owners of its recipe assets
    # The paper's package (its spec's ``__package__``); the defaults below come from its folder.
    package: str | None = None
    contracts_dir: Path | None = None  # None: the package's contracts/ (else data_contracts/)
    recipe_config: Path | None = None  # None: the package's config.yaml
    doc: str | None = None  # None: the package's README.md (relative to the repo root when inside it)
    card_sections: tuple[str, ...] = ()  # extra markdown sections for the dataset card
    paper: PaperCard | None = None  # citation and card text; None: a plug-in without a paper on record
    # Module whose ``defs`` holds the recipe assets (None: the package's ``definitions``); the code
    # location collects those under ``assets/`` itself (assets/recipes/plugins.py loads the others).
    definitions_module: str | None = None
    # Human gold from an imported release in place of LLM-made fields (None: the paper has none).
    gold: GoldRules | None = None
    # Every reject reason its recipe stages write: stage → reason → E2E, UNTESTED or the test file that
    # provokes it (tests/foundation/test_reject_registry.py checks it against the code both ways).
    rejects: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Human review (forge/review, docs/review.md): what a reviewer sees and answers, reviewers per
    # item, splits reviewed, the policy that gates the export.
    review: ReviewSpec = field(default_factory=ReviewSpec)
    # Human protocol steps (forge/protocol, docs/review.md "Protocol steps"): what people did in the paper
    # whose output a recipe stage reads, with the LLM's output as their draft (shown as ``HumanStep.draft`` says).
    human_steps: tuple[HumanStep, ...] = ()
    # The paper's behaviour (forge/benchmarks/hooks.py): requests, reply reading, scoring, judging,
    # gold matching, the release importer, review edits and member checks; its package's hooks.py
    # subclasses ``PaperHooks``. The spec's only non-data field: one object, no loose callables.
    hooks: PaperHooks = field(default_factory=PaperHooks)

    def __post_init__(self) -> None:  # checks only: a spec holds what was declared, unchanged
        self.review.check_stages(self.name, self.recipe_assets)  # a reason may only regenerate its own stages
        unset = [k for k in _PACKAGE_FILES if getattr(self, k) is None]
        if self.package is not None and (unset or self.eval.prompts_dir is None):
            raise ValueError(
                f"benchmark {self.name!r}: a package's spec is made by BenchmarkSpec.of_package, which names "
                f"its folder's files ({', '.join(unset or ['eval.prompts_dir'])} unset)"
            )

    @classmethod
    def of_package(cls, **declared: Any) -> BenchmarkSpec:
        """A paper package's spec (``package=__package__``): what it leaves unset is its folder's
        file, named here, before the spec is made: ``contracts/``, ``config.yaml``, ``README.md``,
        ``<package>.definitions``, ``eval_prompts/`` and ``evals.yaml`` (named; none is read)."""
        package = declared["package"]
        home = package_home(package)
        found = {
            "contracts_dir": home / "contracts",
            "recipe_config": home / "config.yaml",
            "doc": _relative(home / "README.md"),
            "definitions_module": f"{package}.definitions",
        }
        ev: EvalSpec = declared["eval"]
        if ev.prompts_dir is None:
            ev = replace(ev, prompts_dir=home / "eval_prompts")
        if not ev.defaults and ev.defaults_file is None:  # none declared: the package's evals.yaml, named
            ev = replace(ev, defaults_file=home / "evals.yaml")
        unset = {k: v for k, v in found.items() if declared.get(k) is None}
        return cls(**{**declared, **unset, "eval": ev})

    @property
    def home(self) -> Path:
        """The paper package's folder."""
        if self.package is None:
            raise ValueError(f"benchmark {self.name!r} names no package")
        return package_home(self.package)

    @property
    def items_table(self) -> str:
        return f"{self.name}_items"

    @property
    def items_asset(self) -> str:
        return self.recipe_assets[-1]

    def recipe_config_path(self) -> Path | None:
        """``SUBTEXT_<NAME>_CONFIG`` (another file for this recipe), else its ``config.yaml``; None
        for a benchmark that declares no settings file."""
        override = os.environ.get(f"SUBTEXT_{self.name.upper()}_CONFIG")
        return Path(override) if override else self.recipe_config

    def asset(self, stage: str) -> str:
        """``<name>_<stage>``: the shared stages' asset names (splits, gated, export, eval ...)."""
        return f"{self.name}_{stage}"


# The fields ``BenchmarkSpec.of_package`` fills from the package's folder when a spec leaves them unset.
_PACKAGE_FILES = ("contracts_dir", "recipe_config", "doc", "definitions_module")


def package_home(package: str) -> Path:
    """A paper package's folder (the package is being imported, or was, when its spec is made)."""
    return Path(sys.modules[package].__file__).resolve().parent


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
