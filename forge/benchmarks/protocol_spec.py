"""What a paper declares of its human protocol steps (``BenchmarkSpec.human_steps``; forge/protocol).

A protocol step is a task people did in the paper whose output a recipe stage reads: II-Bench's
image inspection and labels, VAGUE's ratings and selection, Hummus's annotation, MAIA's answers.
Each step declares how the LLM's output of the stage it ``corrects`` (its *draft*) is shown
(``DraftMode``): by default ``hidden``, as the papers' people worked (they answered unprompted);
``after_commit`` shows it only once the person has answered, for an optional second pass recorded
separately; ``suggestion`` pre-fills the form with it (LLM-assisted annotation, an opt-in recorded
on every row it shaped). The stage reads the human result where one exists, the LLM's otherwise
(docs/review.md, "Protocol steps"). Dagster-free, declared values only: what a step does (its
form's data, the LLM's answer, its control units and their judge, its rows' preparation) is a
method of the paper's hooks (``forge.benchmarks.hooks.PaperHooks``, by the step's name), delegating
to its ``logic/``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class FieldKind(enum.StrEnum):
    """A control of the step's form, and how several people's answers combine."""

    CHOICE = "choice"  # one of ``options``; people combine by majority
    MULTI = "multi"  # one or more of ``options``; an option is in when half the people chose it
    RATING = "rating"  # an integer 1..``scale`` (Label Studio's Rating); people combine by mean
    TEXT = "text"  # free text (TextArea); the latest person's text counts
    BOXES = "boxes"  # RectangleLabels over the image (labels = ``options``); the latest person's
    SPANS = "spans"  # Labels over a shown text (labels = ``options``); the latest person's


class DraftMode(enum.StrEnum):
    """How a step shows the LLM's draft to a person (docs/review.md "Protocol steps")."""

    HIDDEN = "hidden"  # never before the person commits: no prediction, no draft text in the task
    AFTER_COMMIT = "after_commit"  # hidden first; once answered, a second-pass task shows the draft
    SUGGESTION = "suggestion"  # pre-filled (LLM-assisted annotation; opt-in)

    @property
    def shows_draft(self) -> bool:
        """The first-pass form carries the draft (prediction and draft displays)."""
        return self is DraftMode.SUGGESTION


@dataclass(frozen=True)
class StepField:
    """One answer of the form. ``options``: (stored value, shown label) pairs, so the table keeps a
    paper's canonical spelling and the form shows the official one; ``to``: the shown data
    (``Display.name``) it is about, None = the first one."""

    name: str  # the answer's column in the step's results
    kind: FieldKind  # the control, and how several people's answers combine
    title: str = ""  # the question the form asks
    options: tuple[tuple[str, str], ...] = ()  # (stored value, shown label) pairs
    scale: int = 5  # a rating's top (1..scale)
    required: bool = True  # the form cannot be submitted without it
    to: str | None = None  # the display it is about (Display.name); None: the first one


@dataclass(frozen=True)
class Display:
    """What the form shows: a task data key as an image or a text (``Text`` / ``Image`` tags).
    ``draft``: the display is the LLM's output (a judge's verdict, its explanation): shown only
    where the step's draft is (``DraftMode``), never in a hidden form."""

    name: str  # the task data key shown
    kind: str = "text"  # text | image | images (a list of paths: a clip's frames) | video (a clip file)
    title: str = ""  # the heading above it
    draft: bool = False  # the LLM's output: shown only where the step's draft is


@dataclass(frozen=True)
class StepSample:
    """Which units a step asks people about: all (the default), a share, or a count, drawn by a
    seeded hash of the unit id, so a unit's membership never changes between pushes."""

    share: float | None = None  # a share of the units, in (0, 1]
    count: int | None = None  # a number of units (not with share); neither: all
    seed: str = "protocol"  # the hash seed drawing the sample

    def __post_init__(self) -> None:
        if self.share is not None and not 0 < self.share <= 1:
            raise ValueError(f"sample share must be in (0, 1], got {self.share}")
        if self.count is not None and self.count < 1:
            raise ValueError(f"sample count must be at least 1, got {self.count}")
        if self.share is not None and self.count is not None:
            raise ValueError("a sample declares a share or a count, not both")


@dataclass(frozen=True)
class Control:
    """Control questions screening annotators (MAIA App. A.3): units whose acceptable answer is known.

    ``rate``: the share of a person's queue that is control questions (the push spreads the control
    units among the others at that rate, so everyone meets them while working through the queue).
    A person counts only after answering at least ``min_answered`` controls (every control of the
    queue when it holds fewer) with at least ``threshold`` of them right; otherwise their answers are
    excluded, with the reason. Which units are controls and their known answers: the paper's
    ``hooks.step_controls``. Whether an answer is right: ``hooks.control_check(step, known, values)``
    (the offline rule; shared: the field's value equals the known one), or, where ``judged``,
    ``hooks.control_judge(step, engine, pairs)``: the benchmark's judge (an LLM prompt), one
    ``(right, judged_by)`` per pair, falling back to the rule where it cannot judge."""

    field: str  # the step field whose answer is checked
    threshold: float = 0.9  # the share of controls a person must get right
    min_answered: int = 1  # controls a person answers before counting
    rate: float = 0.1  # the share of a person's queue that is control questions
    # the benchmark's judge decides (``hooks.control_judge``; the step's read needs the LLM engine);
    # False: the offline rule (``hooks.control_check``)
    judged: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.rate <= 1:
            raise ValueError(f"controls.rate must be in (0, 1], got {self.rate}")
        if not 0 <= self.threshold <= 1:
            raise ValueError(f"controls.threshold must be in [0, 1], got {self.threshold}")
        if self.min_answered < 1:
            raise ValueError(f"controls.min_answered must be at least 1, got {self.min_answered}")


@dataclass(frozen=True)
class HumanStep:
    """One human step of a paper.

    ``corrects``: the stage table whose rows are its units (``unit_key`` names them) and whose
    LLM output becomes the prediction. What the form shows of a row (keys of ``display``, media
    paths relative to the data dir under the keys of image displays) and the LLM's answer as
    field → value (the prediction; the fallback) are the paper's hooks ``step_task_data`` and
    ``step_llm_values``, by the step's ``name``; the rows the form is made of, for what ``joins``
    cannot say (Hummus: each annotation's list of regions), are its ``prepare_step``.
    ``thresholds``: field → the paper's minimum of a rating (a unit below any is not kept);
    ``keep_choice``: (field, values) a choice that keeps the unit (an inspection). ``annotators``:
    people per unit (Label Studio's overlap); which units are controls: ``hooks.step_controls``
    (``control`` declares the screening). ``note``: what the paper says people did, shown as the
    project's description."""

    name: str  # the step's name (``<name>_<step>_tasks`` / ``_results``)
    corrects: str  # the stage table whose rows are its units and whose LLM output is the prediction
    unit_key: str  # the column naming a unit
    fields: tuple[StepField, ...]  # the form's answers
    display: tuple[Display, ...]  # what the form shows
    sample: StepSample = field(default_factory=StepSample)  # which units people are asked about
    thresholds: Mapping[str, float] = field(default_factory=dict)  # field → the paper's minimum rating kept
    keep_choice: tuple[str, tuple[str, ...]] | None = None  # (field, values): a choice that keeps the unit
    annotators: int = 1  # people per unit (Label Studio's overlap)
    control: Control | None = None  # the control questions screening annotators (units: ``hooks.step_controls``)
    note: str = ""  # what the paper says people did (the project's description)
    instruction: str = ""  # the header line above the form
    # The recipe stages that read the step's result, in order (the next stage and what follows it up
    # to the items): people_sensor re-runs them for the batches whose units people decided anew.
    read_by: tuple[str, ...] = ()
    # Columns of other tables the form needs, joined on ``unit_key`` (table, columns): an image path
    # the corrected stage does not repeat.
    joins: tuple[tuple[str, tuple[str, ...]], ...] = ()
    draft: DraftMode = DraftMode.HIDDEN  # how the LLM's draft is shown (the papers' way: hidden)

    def displays(self, with_draft: bool) -> tuple[Display, ...]:
        """The displays of a form that shows the draft (``with_draft``) or not."""
        return tuple(d for d in self.display if with_draft or not d.draft)

    def control_of(self, name: str) -> StepField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"step {self.name!r} has no field {name!r}")
