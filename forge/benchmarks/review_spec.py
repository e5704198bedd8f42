"""What a benchmark declares about human review (``BenchmarkSpec.review``), Dagster-free.

A ``ReviewSpec`` says what a reviewer sees (the media kind, the item fields shown, whether the
gold is marked, boxes drawn on the image), what a reviewer answers (accept; reject with a
reason from a fixed list; corrected fields or a moved box), how many reviewers each item needs
and which splits are reviewed. ``forge/review/labelconfig.py`` turns it into the Label Studio
labeling configuration; ``forge/review/gate.py`` applies the policy to the export.

Each paper's spec (``assets/recipes/<paper>/spec.py``) cites the section its numbers follow.
This module imports nothing from ``forge.benchmarks`` (the benchmark spec imports it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ReviewPolicy(enum.StrEnum):
    """What review does to the export."""

    REQUIRED = "required"  # items without the required accepted verdicts are held back
    ADVISORY = "advisory"  # verdicts are recorded and reported; nothing is held back (rejects still drop)
    OFF = "off"  # no review assets push anything


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


@dataclass(frozen=True)
class Regenerate:
    """How "regenerate rejected" reaches the stage that wrote an item (``forge/review/regenerate.py``):
    the generating asset, and the item column that equals that stage's ``LLMRequest.item_id``
    (or ``labels.<field>``, a field of the item's labels JSON)."""

    stage: str  # e.g. "vimu_questions"
    key: str = "unit_id"  # the item column (or labels.<field>) naming the request that generated it


@dataclass(frozen=True)
class ReviewSpec:
    """Paper defaults of human review; ``config/review.yaml`` may override ``policy``,
    ``reviewers`` and ``splits`` per benchmark or per settings profile (the demo's profile
    sets the policy to ``advisory``)."""

    media: Media = Media.IMAGE
    reviewers: int = 1  # accepted verdicts an item needs (Label Studio's overlap)
    splits: tuple[str, ...] = ()  # splits that need review; () = every split
    policy: ReviewPolicy = ReviewPolicy.REQUIRED
    show_gold: bool = True  # mark the gold option / answer for the reviewer
    editable: tuple[str, ...] = ("question", "options", "answer")
    boxes: bool = False  # draw the item's boxes (labels.boxes) on the image, editable
    reasons: tuple[str, ...] = DEFAULT_REASONS
    limits: FieldLimits = FieldLimits()  # most characters per typed field (form and reader)
    human_answers: int = 1  # blind answers per test item for the human baseline
    note: str = ""  # the paper's procedure, for the card
    regenerate: Regenerate | None = None  # None: a rejected item is dropped, never regenerated
    # the review sensor's run also re-exports (a new version only when the content changed); off:
    # publishing stays the user's step (the export shows Unsynced after a review either way)
    export_after_review: bool = False

    def __post_init__(self) -> None:
        if self.reviewers < 1:
            raise ValueError("reviewers must be at least 1")
        bad = [f for f in self.editable if f not in EDITABLE_FIELDS]
        if bad:
            raise ValueError(f"unknown editable field(s) {bad}; known: {EDITABLE_FIELDS}")
        if not self.reasons:
            raise ValueError("a review needs at least one reject reason")
