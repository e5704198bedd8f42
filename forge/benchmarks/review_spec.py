"""What a benchmark declares about human review (``BenchmarkSpec.review``), Dagster-free.

A ``ReviewSpec`` says what a reviewer sees (the media kind, the item fields shown, whether the
gold is marked, boxes drawn on the image), what a reviewer answers (accept; reject with a
reason from a fixed list; corrected fields or a moved box), how many reviewers each item needs
and which splits are reviewed, and what each reject reason does next (drop the source, regenerate
the stage that made the faulted field, or drop the item: ``Consequence``).
``forge/review/labelconfig.py`` turns it into the Label Studio labeling configuration;
``forge/review/gate.py`` applies the policy to the export.

Each paper's spec (``assets/recipes/<paper>/spec.py``) cites the section its numbers follow.
This module imports nothing from ``forge.benchmarks`` (the benchmark spec imports it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from forge.models.protocols import NLIBackend


class ReviewPolicy(enum.StrEnum):
    """What review does to the export."""

    REQUIRED = "required"  # items without the required accepted verdicts are held back
    ADVISORY = "advisory"  # verdicts are recorded and reported; nothing is held back (rejects still drop)
    OFF = "off"  # no review assets push anything


class MemberAnswers(enum.StrEnum):
    """What a unit task's own verdict says about its members (``ReviewSpec.member_answers``)."""

    # the unit's accept (or edit) stands for every member its block leaves unmarked (member = unit)
    UNIT_COVERS = "unit_covers"
    # each member needs an answer of its own (accept, reject or a correction in its block): a unit
    # answer with members left unanswered is refused for those members (member_unanswered)
    REQUIRED = "required"


class Media(enum.StrEnum):
    """What the reviewer looks at."""

    VIDEO = "video"  # the clip with a player (plus the frame the model sees)
    IMAGE = "image"  # the image the model sees


# The fixed list of reject reasons a reviewer picks from (values are stored in `verdicts.reason`
# and in `rejects.reason` as `human_review:<reason>`).
DEFAULT_REASONS: tuple[str, ...] = (
    "wrong_gold",  # the marked answer is not the right one
    "ambiguous",  # more than one option (or none) is defensible
    "no_implicit_meaning",  # answerable from what is literally shown or said
    "needs_outside_knowledge",  # needs context the media does not give
    "bad_media",  # unreadable, wrong clip / image, cut at the wrong place
    "offensive_or_private",  # harmful content or personal information
    "other",
)

# Item fields a reviewer may correct, by the name used in the task form.
EDITABLE_FIELDS = ("question", "options", "answer", "box")


@dataclass(frozen=True)
class FieldLimits:
    """Most characters a reviewer may type into each field of the review form. The form enforces
    them (``maxlength``, ``forge/review/labelconfig.py``) and reading an annotation enforces them
    again (``forge/review/verdicts.py``): a longer value is refused with its reason, never cut or
    applied (the API accepts what the form would not). Defaults sit far above the papers' longest
    items (II-Bench questions and options, MAIA statements) and far below what would bloat a table."""

    question: int = 2000  # the corrected question
    option: int = 500  # one option (one line of the options field)
    options: int = 10  # options in all (letters A-J)
    answer: int = 1000  # the corrected gold answer (letters, a Yes/No option, a box, free text)
    reason_note: int = 1000  # a reviewer's note with a reject or an adjudication

    def __post_init__(self) -> None:
        bad = [k for k, v in vars(self).items() if not isinstance(v, int) or v < 1]
        if bad:
            raise ValueError(f"field limits must be positive integers: {bad}")

    def options_chars(self) -> int:
        """The options field as a whole: every option at its limit, one per line."""
        return self.options * (self.option + 1)


class Action(enum.StrEnum):
    """What a reject reason does next (``ReviewSpec.consequences``, ``forge/review/consequences.py``)."""

    DROP_SOURCE = "drop_source"  # the source (clip, image) leaves the benchmark: every item of it, as a reject
    REGENERATE = "regenerate"  # the named recipe stage is asked again for the item's unit
    DROP_ITEM = "drop_item"  # the rejected item alone is dropped


@dataclass(frozen=True)
class Consequence:
    """One reject reason's consequence. ``key``: for ``drop_source`` the item column (or
    ``labels.<field>`` / ``extra.<field>``) naming the unit the reason is about (its other items
    leave with it: the clip or image by default, a narrower unit where the reason names one, as
    Hummus' pair or MAIA's question); ``names``: that unit in words (the form says what leaves);
    for ``regenerate`` the item column (or ``labels.<field>``) equal to the stage's
    ``LLMRequest.item_id`` (``forge/review/regenerate.py``)."""

    action: Action  # what the reason does next
    stage: str | None = None  # regenerate: the recipe asset that made the faulted field
    key: str = "unit_id"  # the item column (or labels.<field> / extra.<field>) naming the unit or the stage's item id
    names: str = ""  # drop_source: the unit the key names, in words ("" = the clip / image)
    # regenerate: item category -> the stage that made that category's field instead (ViMU: the OE
    # reference answer is written by vimu_questions, the RM/SV/EG gold by vimu_annotations)
    by_category: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Action(self.action)  # a typo names the allowed actions (checked, the declared value kept)
        if (self.action == Action.REGENERATE) != bool(self.stage) or (self.by_category and not self.stage):
            raise ValueError(
                f"{self.action}: a stage is named for regenerate, and only for regenerate ({self.stage!r})"
            )

    def stage_for(self, category: str | None) -> str | None:
        """The stage asked again for an item of ``category`` (None: nothing is regenerated)."""
        return self.by_category.get(str(category), self.stage) if self.action == Action.REGENERATE else None

    def stages(self) -> set[str]:
        return {s for s in (self.stage, *self.by_category.values()) if s}

    def describe(self, media: Media) -> str:
        """The consequence in the words the review form shows beside the reason."""
        source = "clip" if media == Media.VIDEO else "image"
        if self.action == Action.DROP_SOURCE and self.names:
            return f"drops the {self.names}: every item of it leaves the benchmark (the rest of the {source} stays)"
        if self.action == Action.DROP_SOURCE:
            return f"drops the {source}: every item of it leaves the benchmark"
        if self.action == Action.DROP_ITEM:
            return "drops this item only"
        others = ", ".join(f"{c} items: {s}" for c, s in sorted(self.by_category.items()))
        return f"asks {self.stage} again for this {source}" + (f" ({others})" if others else "")


# The reasons that fault the source itself (ViMU §3 filtering, II-Bench §3.2 Stage 3 inspection
# removed such clips and images), and what every default reason does unless a paper says otherwise.
SOURCE_REASONS = ("no_implicit_meaning", "needs_outside_knowledge", "bad_media", "offensive_or_private")
DEFAULT_CONSEQUENCES: dict[str, Consequence] = {
    **{r: Consequence(Action.DROP_ITEM) for r in DEFAULT_REASONS},
    **{r: Consequence(Action.DROP_SOURCE) for r in SOURCE_REASONS},
}


@dataclass
class EditChecks:
    """What a member check (``PaperHooks.member_check``) may use beyond the items, and what it
    leaves behind. ``nli``: the stage's NLI backend (None where the caller has none: then the
    recorded result decides, or the check says it was not run). ``recorded``: what the check
    measured on an earlier read of the same verdict (the verdict row's ``edit_nli``), so that every
    resolve (the export gate's too, which has no model) decides the edit alike. The check fills
    ``record`` (kept on the verdict row) and ``notes`` (the verdict's ``edit_note``)."""

    nli: NLIBackend | None = None  # the stage's NLI backend; None where the caller has none
    recorded: dict[str, Any] = field(default_factory=dict)  # what an earlier read of the verdict measured
    record: dict[str, Any] = field(default_factory=dict)  # filled by the check: kept on the verdict row
    notes: list[str] = field(default_factory=list)  # filled by the check: the verdict's edit_note


@dataclass(frozen=True)
class ReviewSpec:
    """Paper defaults of human review; ``config/review.yaml`` may override ``policy``,
    ``reviewers`` and ``splits`` per benchmark or per settings profile (the demo's profile
    sets the policy to ``advisory``)."""

    media: Media = Media.IMAGE  # what the reviewer looks at
    reviewers: int = 1  # accepted verdicts an item needs (Label Studio's overlap)
    splits: tuple[str, ...] = ()  # splits that need review; () = every split
    policy: ReviewPolicy = ReviewPolicy.REQUIRED  # what review does to the export
    show_gold: bool = True  # mark the gold option / answer for the reviewer
    editable: tuple[str, ...] = ("question", "options", "answer")  # fields a reviewer may correct (EDITABLE_FIELDS)
    boxes: bool = False  # draw the item's boxes (labels.boxes) on the image, editable
    reasons: tuple[str, ...] = DEFAULT_REASONS  # the fixed list of reject reasons a reviewer picks from
    limits: FieldLimits = FieldLimits()  # most characters per typed field (form and reader)
    human_answers: int = 1  # blind answers per test item for the human baseline
    note: str = ""  # the paper's procedure, for the card
    # reject reason -> what it does next (every reason declares one; each paper cites its section)
    # {}: the defaults (DEFAULT_CONSEQUENCES; a reason of the paper's own drops its item), resolved
    # when asked (consequences_in_effect / consequence); readers never read this field itself
    consequences: Mapping[str, Consequence] = field(default_factory=dict)
    # the people sensor's loop run also re-exports (a new version only when the content changed); off:
    # publishing stays the user's step (the export shows Unsynced after a review either way)
    export_after_review: bool = False
    # The paper's review unit (docs/review.md, "Review units"): items sharing the value of this item
    # column, ``labels.<field>`` or ``extra.<field>`` are judged together in one task, and the export
    # takes the unit whole or not at all; None: each item is its own unit.
    unit: str | None = None
    # Where a unit task's heading question is read (an item column, ``labels.<field>`` or
    # ``extra.<field>`` of its first member: the question its members share); None: that member's question.
    unit_question: str | None = None
    # Flags (``extra.review`` notes, by their code) that send a unit to adjudication before any review
    # (MAIA: ``pool_contradiction``, the pools an additional annotator resolved, §3 fn. 7).
    adjudicate_flags: tuple[str, ...] = ()
    # Whether a unit task's own verdict stands for its members (docs/review.md, "Review units"):
    # ``unit_covers`` where the paper's people judged the unit as a whole, ``required`` where each
    # member was judged on its own (each paper's spec says which, and why)
    member_answers: MemberAnswers = MemberAnswers.UNIT_COVERS

    def __post_init__(self) -> None:
        MemberAnswers(self.member_answers)  # a typo names the values (checked, the declared value kept)
        if self.reviewers < 1:
            raise ValueError("reviewers must be at least 1")
        bad = [f for f in self.editable if f not in EDITABLE_FIELDS]
        if bad:
            raise ValueError(f"unknown editable field(s) {bad}; known: {EDITABLE_FIELDS}")
        if not self.reasons:
            raise ValueError("a review needs at least one reject reason")
        if self.unit is not None and not self.unit.strip():
            raise ValueError("unit names an item column, labels.<field> or extra.<field>; None for one item")
        if not self.consequences:
            return  # the defaults (consequences_in_effect), complete by construction
        missing = [r for r in self.reasons if r not in self.consequences]
        unknown = [r for r in self.consequences if r not in self.reasons]
        if missing or unknown:
            raise ValueError(
                f"every reject reason declares one consequence: {missing or 'none'} without one, "
                f"{unknown or 'none'} not a reason of this review ({', '.join(self.reasons)})"
            )

    def consequences_in_effect(self) -> dict[str, Consequence]:
        """Reject reason -> what it does next: the declared ``consequences``, or where none are
        declared the defaults (``DEFAULT_CONSEQUENCES``; a reason of the paper's own drops its item).
        Resolved when asked: the spec keeps what was declared."""
        if self.consequences:
            return dict(self.consequences)
        return {r: DEFAULT_CONSEQUENCES.get(r, Consequence(Action.DROP_ITEM)) for r in self.reasons}

    def consequence(self, reason: str | None) -> Consequence | None:
        """What ``reason`` does next (None for a reason this review does not have)."""
        return self.consequences_in_effect().get(str(reason))

    def check_stages(self, benchmark: str, stages: tuple[str, ...]) -> None:
        """Refuse a consequence that regenerates a stage the benchmark does not have (at load)."""
        for reason, c in self.consequences_in_effect().items():
            for stage in sorted(c.stages() - set(stages)):
                raise ValueError(
                    f"benchmark {benchmark!r}: reject reason {reason!r} regenerates {stage!r}, "
                    f"which is not one of its recipe assets ({', '.join(stages)})"
                )
